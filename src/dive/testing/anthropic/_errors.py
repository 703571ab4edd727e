"""Error answers: status ↔ ``error.type`` (wire-apis.md A7) and the error body.

:class:`APIErrorAnswer` is raised inside the simulator wherever a request must be refused
(validation, unknown path, missing key, exhausted script) and turned into the JSON body
``{"type": "error", "error": {"type": …, "message": …}, "request_id": …}``.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "APIErrorAnswer",
    "error_body",
    "error_type_for_status",
    "invalid_request",
    "status_for_error_type",
]

_TYPE_BY_STATUS: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_STATUS_BY_TYPE: Mapping[str, int] = {v: k for k, v in _TYPE_BY_STATUS.items()}

_DEFAULT_MESSAGES: Mapping[str, str] = {
    "invalid_request_error": "Invalid request.",
    "authentication_error": "invalid x-api-key",
    "billing_error": "Your credit balance is too low to access the Anthropic API.",
    "permission_error": "Your API key does not have permission to use the specified resource.",
    "not_found_error": "The requested resource could not be found.",
    "conflict_error": "Conflict.",
    "request_too_large": "Request exceeds the maximum allowed number of bytes.",
    "rate_limit_error": "This request would exceed the rate limit for your organization.",
    "api_error": "Internal server error",
    "timeout_error": "Request timed out.",
    "overloaded_error": "Overloaded",
}


def error_type_for_status(status: int) -> str:
    """The ``error.type`` the API uses for an HTTP status (unlisted 4xx → invalid request)."""
    if status in _TYPE_BY_STATUS:
        return _TYPE_BY_STATUS[status]
    return "api_error" if status >= 500 else "invalid_request_error"


def status_for_error_type(error_type: str) -> int:
    """The HTTP status for an ``error.type`` (unknown types → 500)."""
    return _STATUS_BY_TYPE.get(error_type, 500)


def default_message(error_type: str) -> str:
    """A plausible default message for an error type."""
    return _DEFAULT_MESSAGES.get(error_type, "Internal server error")


def error_body(error_type: str, message: str, request_id: str) -> dict[str, object]:
    """The API's error body."""
    return {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": request_id,
    }


class APIErrorAnswer(Exception):
    """A request the simulator answers with an error status."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        error_type: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_type = error_type or error_type_for_status(status)
        self.headers = dict(headers or {})


def invalid_request(message: str) -> APIErrorAnswer:
    """A 400 ``invalid_request_error``."""
    return APIErrorAnswer(400, message)
