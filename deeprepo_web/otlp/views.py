"""OTLP/HTTP receivers: POST /v1/traces and /v1/logs, as an OpenTelemetry SDK sends them when
OTEL_EXPORTER_OTLP_ENDPOINT points at this server (and OTEL_EXPORTER_OTLP_HEADERS carries the key).

Answers follow the OTLP/HTTP spec: the response body is in the request's encoding, a request with
some bad spans is answered 200 with `partial_success` (how many were rejected and why), a body
that cannot be read at all gets 400 with a Status message, the wrong Content-Type gets 415.
"""

from __future__ import annotations

import zlib
from typing import Any

import orjson
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from deeprepo_web.accounts import access
from deeprepo_web.accounts.models import ApiKey
from deeprepo_web.mlflow_server.errors import MlflowError
from deeprepo_web.mlflow_server.traces import mlflow_spans_receive
from deeprepo_web.otlp.decode import JSON, PROTOBUF, BodyError, decode
from deeprepo_web.otlp.services import otlp_items_ingest, otlp_run_get

MAX_BODY = 64 << 20  # bytes after gzip: a compressed body may not unpack past this
MAX_VALUE = 4 << 20  # characters of one attribute value; longer ones are cut (and said so)


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _status_body(content_type: str, code: int, message: str) -> bytes:
    """A google.rpc.Status (code, message), the error body OTLP/HTTP asks for."""
    if content_type == PROTOBUF:
        text = message.encode()
        return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text
    return orjson.dumps({"code": code, "message": message})


def _error(content_type: str, status: int, message: str) -> HttpResponse:
    rpc = {400: 3, 401: 16, 403: 7, 404: 5, 413: 8, 415: 3}.get(status, 2)
    kind = content_type if content_type in (PROTOBUF, JSON) else JSON
    return HttpResponse(_status_body(kind, rpc, message), status=status, content_type=kind)


def _key(request: HttpRequest) -> ApiKey:
    key = access.api_key_from_authorization(request.headers.get("Authorization", ""))
    if key is None:
        raise _Refused(401, "missing, unknown, expired or revoked API key: send "
                            "'Authorization: Bearer drk_…' (OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20drk_…)")
    if not access.key_allows(key, "ingest"):
        raise _Refused(403, "this API key may not write")
    project = request.headers.get("x-deeprepo-project", "").strip()
    if project and project != key.project.slug:
        raise _Refused(404, f"x-deeprepo-project: {project!r} is not the project of this API key")
    return key


def _body(request: HttpRequest) -> bytes:
    try:
        raw = request.body
    except RequestDataTooBig as exc:
        raise _Refused(413, f"body over the limit of {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes; "
                            "send smaller batches") from exc
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return raw
    if encoding != "gzip":
        raise _Refused(415, f"Content-Encoding {encoding!r}: only gzip (or none) is read")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        body = inflater.decompress(raw, MAX_BODY)
    except zlib.error as exc:
        raise _Refused(400, f"body: Content-Encoding is gzip but the body is not gzip data ({exc})") from exc
    if inflater.unconsumed_tail:
        raise _Refused(413, f"body unpacks past {MAX_BODY} bytes; send smaller batches")
    return body


def _content_type(request: HttpRequest) -> str:
    kind = (request.content_type or "").strip().lower()
    if kind not in (PROTOBUF, JSON):
        raise _Refused(415, f"Content-Type {kind or '(none)'!r}: send {PROTOBUF} or {JSON} (OTLP/HTTP)")
    return kind


def _receive(request: HttpRequest, *, logs: bool) -> HttpResponse:
    kind = (request.content_type or "").strip().lower()
    try:
        key = _key(request)  # first: a caller without a key learns nothing else about this endpoint
        kind = _content_type(request)
        decoded = decode(_body(request), kind, logs=logs, max_value=MAX_VALUE)
    except _Refused as exc:
        return _error(kind, exc.status, str(exc))
    except BodyError as exc:
        return _error(kind, 400, str(exc))
    mlflow_experiment = request.headers.get("x-mlflow-experiment-id", "").strip()
    if mlflow_experiment and not logs:  # an MLflow client: its trace info says later which run
        try:
            mlflow_spans_receive(project=key.project, experiment_id=mlflow_experiment, decoded=decoded)
        except MlflowError as exc:
            return _error(kind, exc.status, exc.message)
        return _answer(kind, logs, decoded.rejected, "; ".join(decoded.warnings))
    header = request.headers.get("x-deeprepo-run", "")
    for resource, items in decoded.groups:
        run = otlp_run_get(project=key.project, header=header, resource=resource)
        otlp_items_ingest(run=run, items=items)
    return _answer(kind, logs, decoded.rejected, "; ".join(decoded.warnings))


def _answer(kind: str, logs: bool, rejected: int, message: str) -> HttpResponse:
    response: Any = ExportLogsServiceResponse() if logs else ExportTraceServiceResponse()
    if rejected or message:
        if logs:
            response.partial_success.rejected_log_records = rejected
        else:
            response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    if kind == PROTOBUF:
        return HttpResponse(response.SerializeToString(), content_type=PROTOBUF)
    body: dict[str, Any] = {}
    if rejected or message:
        field = "rejectedLogRecords" if logs else "rejectedSpans"
        body["partialSuccess"] = {field: str(rejected), "errorMessage": message}
    return HttpResponse(orjson.dumps(body), content_type=JSON)


@csrf_exempt
@require_POST
def traces(request: HttpRequest) -> HttpResponse:
    return _receive(request, logs=False)


@csrf_exempt
@require_POST
def logs(request: HttpRequest) -> HttpResponse:
    return _receive(request, logs=True)
