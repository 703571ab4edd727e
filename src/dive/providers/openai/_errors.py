"""OpenAI SDK exceptions → dive's ``ProviderError`` tree (status, request id, retry-after).

Retryable: the shared ``RETRY_STATUSES`` (408, 409, 429 unless ``insufficient_quota``, 500, 502,
503, 504, 529) with ``x-should-retry`` winning, connection errors and timeouts, and in-stream
``rate_limit_exceeded`` / ``server_error`` / ``server_is_overloaded``. A connection that could not
be made names the URL and the base-URL variable (``OPENAI_BASE_URL``, ``OLLAMA_BASE_URL``, …).
"""

from __future__ import annotations

from typing import Any, cast

import openai

from dive.errors import (
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitedError,
    StreamInterruptedError,
)
from dive.providers._retry import (
    connect_error,
    request_url,
    retry_after,
    status_class,
    status_retryable,
    transport_errors,
)

__all__ = ["stream_error", "translate"]

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
        env = f"{provider.upper().replace('-', '_')}_BASE_URL"
        refused = connect_error(exc, provider, request_url(exc, provider), env)
        if refused is not None:
            return refused
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
    cls = status_class(status) or ProviderError
    err = cls(
        f"{provider} returned {status} {code or 'error'}: {message}",
        provider=provider,
        status=status,
        request_id=exc.request_id or headers.get("x-request-id"),
        retry_after=retry_after(headers),
        error_type=code or None,
        body=exc.body,
    )
    retryable = status_retryable(status, headers)
    if status == 429 and code == "insufficient_quota":
        retryable = False
    err.retryable = retryable
    return err
