"""Error answers in OpenAI's envelope (wire-apis.md B4, C4).

:class:`APIErrorAnswer` is raised inside the simulator wherever a request must be refused
(validation, unknown path, missing key, exhausted script) and becomes the JSON body
``{"error": {"message": …, "type": …, "param": …, "code": …}}``.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "APIErrorAnswer",
    "default_code",
    "default_message",
    "default_type",
    "error_body",
    "invalid_request",
    "status_for_code",
]

_TYPE_BY_STATUS: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    409: "invalid_request_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "requests",
    500: "server_error",
    502: "server_error",
    503: "server_error",
    504: "server_error",
}

_MESSAGES: Mapping[int, str] = {
    400: "Invalid request.",
    401: "Incorrect API key provided.",
    403: "You are not allowed to access this resource.",
    404: "The requested resource could not be found.",
    409: "Conflict.",
    413: "Request too large.",
    422: "Unprocessable entity.",
    429: "Rate limit reached for requests. Please try again in 1s.",
    500: "The server had an error while processing your request. Sorry about that!",
    502: "Bad gateway.",
    503: "The server is overloaded or not ready yet.",
    504: "Gateway timeout.",
}

_CODE_MESSAGES: Mapping[str, str] = {
    "rate_limit_exceeded": "Rate limit reached for requests. Please try again in 1s.",
    "insufficient_quota": (
        "You exceeded your current quota, please check your plan and billing details."
    ),
    "invalid_api_key": "Incorrect API key provided.",
    "model_not_found": "The model does not exist or you do not have access to it.",
    "context_length_exceeded": "This model's maximum context length has been exceeded.",
    "server_error": "The server had an error while processing your request. Sorry about that!",
}

_TYPE_BY_CODE: Mapping[str, str] = {
    "insufficient_quota": "insufficient_quota",
    "rate_limit_exceeded": "requests",
}

_STATUS_BY_CODE: Mapping[str, int] = {
    "rate_limit_exceeded": 429,
    "insufficient_quota": 429,
    "invalid_api_key": 401,
    "model_not_found": 404,
    "context_length_exceeded": 400,
    "invalid_prompt": 400,
}


def default_type(status: int, code: str | None = None) -> str:
    """The ``error.type`` the API uses for a status (and code)."""
    if code is not None and code in _TYPE_BY_CODE:
        return _TYPE_BY_CODE[code]
    if status in _TYPE_BY_STATUS:
        return _TYPE_BY_STATUS[status]
    return "server_error" if status >= 500 else "invalid_request_error"


def default_code(status: int) -> str | None:
    """The ``error.code`` a fault with this status carries when none is given."""
    return {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status)


def default_message(status: int, code: str | None = None) -> str:
    """A plausible message for a status (and code)."""
    if code is not None and code in _CODE_MESSAGES:
        return _CODE_MESSAGES[code]
    if status in _MESSAGES:
        return _MESSAGES[status]
    return _MESSAGES[500] if status >= 500 else _MESSAGES[400]


def status_for_code(code: str | None) -> int:
    """The HTTP status of an error code seen outside an HTTP error (unknown codes → 500)."""
    return _STATUS_BY_CODE.get(code or "", 500)


def error_body(
    message: str, *, type: str, param: str | None = None, code: str | None = None
) -> dict[str, object]:
    """The API's error envelope."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


class APIErrorAnswer(Exception):
    """A request the simulator answers with an error status."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str | None = None,
        param: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type or default_type(status, code)
        self.param = param
        self.code = code
        self.headers = dict(headers or {})

    def body(self) -> dict[str, object]:
        return error_body(self.message, type=self.type, param=self.param, code=self.code)


def invalid_request(
    message: str, *, param: str | None = None, code: str | None = None
) -> APIErrorAnswer:
    """A 400 ``invalid_request_error``."""
    return APIErrorAnswer(400, message, type="invalid_request_error", param=param, code=code)
