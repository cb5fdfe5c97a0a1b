"""MLflow's error answers: `{"error_code": ..., "message": ...}` with the HTTP status its client expects.

The client turns the body into a RestException whose text is the message, so messages say what was
wrong and where, in one line.
"""

from __future__ import annotations

import orjson
from django.http import HttpResponse

STATUS = {
    "INVALID_PARAMETER_VALUE": 400,
    "BAD_REQUEST": 400,
    "MALFORMED_REQUEST": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "RESOURCE_DOES_NOT_EXIST": 404,
    "ENDPOINT_NOT_FOUND": 404,
    "RESOURCE_ALREADY_EXISTS": 400,
    "REQUEST_LIMIT_EXCEEDED": 413,
    "TEMPORARILY_UNAVAILABLE": 503,
    "INTERNAL_ERROR": 500,
}


class MlflowError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def status(self) -> int:
        return STATUS.get(self.code, 400)


def invalid(message: str) -> MlflowError:
    return MlflowError("INVALID_PARAMETER_VALUE", message)


def missing(message: str) -> MlflowError:
    return MlflowError("RESOURCE_DOES_NOT_EXIST", message)


def error_response(exc: MlflowError) -> HttpResponse:
    response = HttpResponse(orjson.dumps({"error_code": exc.code, "message": exc.message}), status=exc.status,
                            content_type="application/json")
    if exc.status == 401:
        response["WWW-Authenticate"] = 'Basic realm="deeprepo", charset="UTF-8"'
    return response
