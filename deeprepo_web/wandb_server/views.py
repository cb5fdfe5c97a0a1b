"""W&B-compatible endpoints at the site root, where `WANDB_BASE_URL=http://HOST:PORT` sends the SDK:
POST /graphql, POST /files/<entity>/<project>/<run>/file_stream, PUT /files/upload/<signed token>.

The SDK authenticates with HTTP Basic, user `api`, password the API key. A missing or wrong key is
a 401 (the SDK says the key is invalid and makes no run); the file stream never answers a valid
key with a 4xx, which would stop the SDK streaming for the rest of the run.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.core import signing
from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import ApiKey
from deeprepo_web.runs.services import ingest_refusal_note
from deeprepo_web.wandb_server import mapping
from deeprepo_web.wandb_server.filestream import chunk_store
from deeprepo_web.wandb_server.resolvers import Context
from deeprepo_web.wandb_server.schema import execute
from deeprepo_web.wandb_server.uploads import UploadError, upload_receive, upload_target

log = logging.getLogger(__name__)
WRITER_HEADER = "X-WANDB-ASYNC-CLIENT-ID"


def _key(request: HttpRequest) -> ApiKey | None:
    header = request.headers.get("Authorization", "")
    if not header.lower().startswith("basic "):  # the SDK sends Basic `api:<key>`, nothing else
        return None
    key = access.api_key_from_authorization(header)
    return key if key is not None and access.key_allows(key, "ingest") else None


def _unauthorized() -> HttpResponse:
    message = ("missing, unknown, expired or revoked API key, or one that may not write: "
               "set WANDB_API_KEY to a deeprepo API key (Settings → API keys)")
    response = JsonResponse({"errors": [{"message": message}]}, status=401)
    response["WWW-Authenticate"] = 'Basic realm="deeprepo"'
    return response


def _loads(raw: bytes) -> Any:
    """JSON as the SDK writes it: NaN and ±Infinity may come as bare tokens."""
    return json.loads(raw)


def _graphql_error(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"errors": [{"message": message}]}, status=status)


@csrf_exempt
@require_POST
def graphql(request: HttpRequest) -> HttpResponse:
    key = _key(request)
    if key is None:
        return _unauthorized()
    try:
        body = _loads(request.body)
    except RequestDataTooBig:
        return _graphql_error("request body too large", 413)
    except ValueError as exc:
        return _graphql_error(f"body: not JSON ({exc})")
    if not isinstance(body, dict) or not isinstance(body.get("query"), str):
        return _graphql_error("body: a JSON object with a 'query' string is expected")
    variables = body.get("variables")
    if variables is not None and not isinstance(variables, dict):
        return _graphql_error("variables: a JSON object is expected")
    operation = body.get("operationName") or None
    result = execute(query=body["query"], variables=variables, operation=operation if isinstance(operation, str)
                     else None, context=Context(key=key, request=request))
    return JsonResponse(result.formatted, json_dumps_params={"allow_nan": True})


@csrf_exempt
@require_POST
def file_stream(request: HttpRequest, entity: str, project: str, run_id: str) -> HttpResponse:
    key = _key(request)
    if key is None:
        return _unauthorized()
    try:
        body = _loads(request.body)
    except RequestDataTooBig:
        # Still a 2xx-free answer the SDK retries: a 4xx would end the stream for good.
        return JsonResponse({"error": "chunk over the server's body limit (DEEPREPO_MAX_BODY_BYTES)"}, status=500)
    except ValueError as exc:
        log.warning("wandb file stream %s/%s: body not JSON (%s); dropped", project, run_id, exc)
        return JsonResponse({})
    if not isinstance(body, dict):
        return JsonResponse({})
    run, _created = mapping.run_get_or_create(project=key.project, wb_project=project, name=run_id[:120])
    writer = request.headers.get(WRITER_HEADER, "")[:128]
    result = chunk_store(run=run, writer=writer, body=body)
    if result.problems:
        # Answered 200 all the same (a 4xx would stop the SDK's stream): what was skipped and why
        # shows as the run page's banner of refused input.
        ingest_refusal_note(run=run, kind="metrics", error="; ".join(result.problems[:20]))
    return JsonResponse({})


@csrf_exempt
@require_http_methods(["PUT"])
def upload(request: HttpRequest, token: str) -> HttpResponse:
    try:
        run, name = upload_target(token)
    except (signing.BadSignature, ObjectDoesNotExist, KeyError):
        return HttpResponse("upload URL unknown or expired", status=403, content_type="text/plain")
    try:
        what = upload_receive(run=run, name=name, stream=request)
    except UploadError as exc:
        # Answered 200: the file arrived; what could not be made of it is said in the server's log.
        log.warning("wandb upload %s %s: %s", run.public_id, name, exc)
        return HttpResponse(str(exc), content_type="text/plain")
    return HttpResponse(what, content_type="text/plain")
