"""HTTP side of the MLflow-compatible server: the key (Bearer or Basic), the endpoint, the answer.

`MLFLOW_TRACKING_URI=http://HOST:PORT` with `MLFLOW_TRACKING_TOKEN=<key>` (or
`MLFLOW_TRACKING_USERNAME=<anything> MLFLOW_TRACKING_PASSWORD=<key>`) is all a trainer changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.csrf import csrf_exempt

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import ApiKey
from deeprepo_web.mlflow_server.errors import MlflowError, error_response
from deeprepo_web.mlflow_server.tracking import ENDPOINTS
from deeprepo_web.mlflow_server.wire import args

# What GET /version says: MLflow clients send trace spans over OTLP only to servers ≥ 3.4.
VERSION = "3.17.0"


def api_key(request: HttpRequest, *, write: bool) -> ApiKey:
    key = access.api_key_from_authorization(request.headers.get("Authorization", ""))
    if key is None:
        raise MlflowError("UNAUTHENTICATED", "missing, unknown, expired or revoked API key: set "
                                             "MLFLOW_TRACKING_TOKEN to a deeprepo API key (drk_…), or "
                                             "MLFLOW_TRACKING_PASSWORD with any MLFLOW_TRACKING_USERNAME")
    if write and not access.key_allows(key, "ingest"):
        raise MlflowError("PERMISSION_DENIED", "this API key may not write (it lacks the ingest scope)")
    return key


def answer(data: Any, status: int = 200) -> HttpResponse:
    return HttpResponse(orjson.dumps(data), status=status, content_type="application/json")


def guarded(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """MLflow errors as MLflow answers them; a database that is away as a 503 the client retries."""

    def wrapped(request: HttpRequest, *a: Any, **kw: Any) -> HttpResponseBase:
        try:
            return view(request, *a, **kw)
        except MlflowError as exc:
            return error_response(exc)
        except DatabaseError as exc:
            return error_response(MlflowError("TEMPORARILY_UNAVAILABLE", f"database unavailable: {exc}"[:300]))

    wrapped.__name__ = view.__name__
    return csrf_exempt(wrapped)


@guarded
def tracking(request: HttpRequest, endpoint: str) -> HttpResponse:
    handler = ENDPOINTS.get((request.method or "GET", endpoint.strip("/")))
    if handler is None:
        known = sorted({e for _, e in ENDPOINTS if e == endpoint.strip("/")})
        what = f"{request.method} is not served for {endpoint}" if known else f"no endpoint {endpoint!r}"
        raise MlflowError("ENDPOINT_NOT_FOUND", f"{what} (this server implements MLflow's runs, metrics, "
                                                "params, tags, experiments, artifacts and traces)")
    key = api_key(request, write=request.method != "GET")
    return answer(handler(key, args(request)))


def version(request: HttpRequest) -> HttpResponse:
    return HttpResponse(VERSION, content_type="text/plain")


@guarded
def server_info(request: HttpRequest) -> HttpResponse:
    api_key(request, write=False)
    return answer({"multipart_upload_enabled": False, "multipart_download_enabled": False})
