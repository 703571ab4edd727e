"""Error answers in Google's envelope (wire-apis.md Part F, "Errors").

:class:`APIErrorAnswer` is raised inside the simulator wherever a request must be refused
(validation, unknown path, missing key, exhausted script) and becomes the JSON body
``{"error": {"code": 400, "message": "…", "status": "INVALID_ARGUMENT"}}``, with
``details`` when there are any (a ``google.rpc.RetryInfo`` for a fault with ``retry_after``).
The ``google-genai`` SDK raises ``errors.ClientError`` for 4xx and ``errors.ServerError`` for
5xx, with ``code``, ``status`` and ``message`` read from this body.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "APIErrorAnswer",
    "default_message",
    "error_body",
    "invalid_argument",
    "status_name",
]

_STATUS_NAMES: Mapping[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

_MESSAGES: Mapping[int, str] = {
    400: "Request contains an invalid argument.",
    401: "Request had invalid authentication credentials.",
    403: (
        "Method doesn't allow unregistered callers (callers without established identity). "
        "Please use API Key or other form of API consumer identity to call this API."
    ),
    404: "Requested entity was not found.",
    409: "The operation was aborted.",
    413: "Request payload size exceeds the limit.",
    429: "Resource has been exhausted (e.g. check quota).",
    499: "The operation was cancelled.",
    500: (
        "An internal error has occurred. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting"
    ),
    501: "Method not implemented.",
    503: "The model is overloaded. Please try again later.",
    504: "Deadline expired before operation could complete.",
}


def status_name(code: int) -> str:
    """The ``google.rpc.Code`` name Google reports with an HTTP status."""
    if code in _STATUS_NAMES:
        return _STATUS_NAMES[code]
    return "INTERNAL" if code >= 500 else "FAILED_PRECONDITION" if code >= 400 else "UNKNOWN"


def default_message(code: int) -> str:
    """A plausible default message for an HTTP status."""
    return _MESSAGES.get(code, "Internal error encountered." if code >= 500 else "Bad request.")


def error_body(
    code: int, message: str, status: str, details: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """Google's error envelope."""
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = [dict(d) for d in details]
    return {"error": error}


class APIErrorAnswer(Exception):
    """A request the simulator answers with an error status."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        status: str | None = None,
        headers: Mapping[str, str] | None = None,
        details: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status or status_name(code)
        self.headers = dict(headers or {})
        self.details = [dict(d) for d in details]

    @property
    def body(self) -> dict[str, Any]:
        return error_body(self.code, self.message, self.status, self.details)


def invalid_argument(message: str) -> APIErrorAnswer:
    """A 400 ``INVALID_ARGUMENT``."""
    return APIErrorAnswer(400, message)
