"""The HTTP API (/api/v1): one NinjaAPI with its body parser and error handlers, and a router per feature.

It sits above every feature (it mounts their routers), apart from `api/` (auth, errors, field types),
which those routers import: features import `api`, only this module imports their routers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from deeprepo_web import storage
from deeprepo_web.api.docs import VendoredSwagger
from deeprepo_web.api.errors import loads, pydantic_error_line
from deeprepo_web.artifacts.api import router as artifacts_router
from deeprepo_web.artifacts.services import ArtifactError
from deeprepo_web.front.paging import BadCursor
from deeprepo_web.importers.api import router as imports_router
from deeprepo_web.runs.api import router as runs_router
from deeprepo_web.runs.services import IngestError
from deeprepo_web.search.api import router as search_router
from deeprepo_web.trajectories.api import rollout_reads_add


class JsonParser(Parser):
    def parse_body(self, request: HttpRequest) -> Any:
        return loads(request.body)


api = NinjaAPI(
    title="deeprepo-web API",
    version="1",
    urls_namespace="api",
    docs_url="/docs",
    docs=VendoredSwagger(),
    openapi_url="/openapi.json",
    parser=JsonParser(),
)


def _handle(exc_type: type[Exception], status: int | Callable[[Any], int],
            message: Callable[[Any], str] = str) -> None:
    """Answer `exc_type` with one line, `message(exc)`, and `status` (a number, or read off the exception)."""

    def handler(request: HttpRequest, exc: Any) -> HttpResponse:
        return api.create_response(request, {"error": message(exc)},
                                   status=status if isinstance(status, int) else status(exc))

    api.add_exception_handler(exc_type, handler)


_handle(ValidationError, 422, lambda exc: pydantic_error_line(exc.errors))
_handle(AuthenticationError, 401,
        lambda exc: "missing, unknown, expired or revoked API key (Authorization: Bearer drk_…)")
_handle(HttpError, lambda exc: exc.status_code)
_handle(Http404, 404, lambda exc: "not found")
_handle(IngestError, 422)
_handle(BadCursor, 400)
_handle(ArtifactError, lambda exc: exc.status)
_handle(storage.StorageUnavailable, 503, lambda exc: f"artifact store unavailable, try again later: {exc}")
_handle(storage.StorageError, 502)

rollout_reads_add(runs_router)
api.add_router("/v1", runs_router)
api.add_router("/v1", imports_router)
api.add_router("/v1", artifacts_router)
api.add_router("/v1", search_router)
