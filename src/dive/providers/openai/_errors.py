"""OpenAI SDK exceptions → dive's ``ProviderError`` tree (status, request id, retry-after)."""

from __future__ import annotations

from typing import Any, cast

import openai

from dive.errors import (
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitedError,
    StreamInterruptedError,
)
from dive.providers._retry import retry_after, transport_errors

__all__ = ["stream_error", "translate"]

_BY_STATUS: dict[int, type[ProviderError]] = {
    400: InvalidRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    422: InvalidRequestError,
    429: RateLimitedError,
    503: OverloadedError,
    504: ProviderTimeoutError,
}
_RETRY_STATUS = frozenset({429, 503, 504})
_RETRY_CODES = frozenset({"rate_limit_exceeded", "server_error", "server_is_overloaded"})


_TRANSPORT = transport_errors()


def _info(body: Any) -> dict[str, Any]:
    if isinstance(body, dict):
        data = cast("dict[str, Any]", body)
        inner = data.get("error")
        return cast("dict[str, Any]", inner) if isinstance(inner, dict) else data
    return {}


def stream_error(provider: str, payload: dict[str, Any]) -> ProviderError:
    """An error that arrived inside a 200 stream."""
    info = _info(payload)
    code = str(info.get("code") or info.get("type") or "")
    message = str(info.get("message") or payload)
    err = (RateLimitedError if code == "rate_limit_exceeded" else ProviderError)(
        f"{provider} stream error {code}: {message}", provider=provider, error_type=code or None
    )
    err.retryable = code in _RETRY_CODES
    return err


def translate(exc: BaseException, provider: str = "openai") -> ProviderError:
    """A dive ``ProviderError`` for any exception the SDK raised."""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, openai.APITimeoutError):
        err: ProviderError = ProviderTimeoutError(
            f"{provider}: request timed out", provider=provider
        )
        err.retryable = True
        return err
    if isinstance(exc, openai.APIConnectionError):
        err = ProviderConnectionError(f"{provider}: connection failed: {exc}", provider=provider)
        err.retryable = True
        return err
    if isinstance(exc, openai.APIStatusError):
        return _status(exc, provider)
    if isinstance(exc, openai.APIError):
        return stream_error(provider, {"error": _info(exc.body) or {"message": str(exc)}})
    if isinstance(exc, _TRANSPORT):
        err = ProviderConnectionError(f"{provider}: connection broke: {exc!r}", provider=provider)
        err.retryable = True
        return err
    err = StreamInterruptedError(f"{provider}: the stream failed: {exc!r}", provider=provider)
    return err


def _status(exc: openai.APIStatusError, provider: str) -> ProviderError:
    info = _info(exc.body)
    code = str(info.get("code") or info.get("type") or "")
    message = str(info.get("message") or exc.message)
    status = exc.status_code
    headers = exc.response.headers
    cls = _BY_STATUS.get(status, ProviderError)
    err = cls(
        f"{provider} returned {status} {code or 'error'}: {message}",
        provider=provider,
        status=status,
        request_id=exc.request_id or headers.get("x-request-id"),
        retry_after=retry_after(headers),
        error_type=code or None,
        body=exc.body,
    )
    retryable = status in _RETRY_STATUS
    should = headers.get("x-should-retry")
    if should in ("true", "false"):
        retryable = should == "true"
    if status == 429 and code == "insufficient_quota":
        retryable = False
    err.retryable = retryable
    return err
