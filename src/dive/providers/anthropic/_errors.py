"""Vendor exceptions → dive's ``ProviderError`` tree (status, request id, retry-after).

Retryable: the shared ``RETRY_STATUSES`` (408, 409, 429 unless terminal — a spend or balance
limit —, 500, 502, 503, 504, 529), connection errors and timeouts, and in-stream
``overloaded_error`` / ``rate_limit_error`` / ``api_error`` (on Bedrock ``throttlingException``,
``serviceUnavailableException``, ``internalServerException``, ``modelStreamErrorException``).
``x-should-retry`` overrides the
status rule, never for a terminal 429. A connection that could not be made names the URL and
``ANTHROPIC_BASE_URL``.
"""

from __future__ import annotations

from typing import Any, cast

import anthropic

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
from dive.providers._retry import (
    connect_error,
    header_says_retry,
    request_url,
    retry_after,
    status_class,
    status_retryable,
    transport_errors,
)
from dive.providers.anthropic._response import sub

__all__ = ["translate"]

_BY_TYPE: dict[str, type[ProviderError]] = {
    "overloaded_error": OverloadedError,
    "rate_limit_error": RateLimitedError,
    "api_error": ProviderError,
    "timeout_error": ProviderTimeoutError,
    "invalid_request_error": InvalidRequestError,
    "authentication_error": AuthenticationError,
    "permission_error": PermissionDeniedError,
    "not_found_error": NotFoundError,
    # Bedrock's stream exceptions (``:exception-type`` of an event-stream frame)
    "throttlingException": RateLimitedError,
    "serviceUnavailableException": OverloadedError,
    "internalServerException": ProviderError,
    "modelStreamErrorException": ProviderError,
    "modelTimeoutException": ProviderTimeoutError,
    "validationException": InvalidRequestError,
}
_RETRY_TYPES = frozenset(
    {
        "overloaded_error",
        "rate_limit_error",
        "api_error",
        "throttlingException",
        "serviceUnavailableException",
        "internalServerException",
        "modelStreamErrorException",
    }
)


_TRANSPORT_ERRORS = transport_errors()


def _terminal_429(message: str) -> bool:
    text = message.lower()
    return any(w in text for w in ("credit balance", "spend limit", "billing", "usage limit"))


def translate(exc: BaseException, provider: str = "anthropic") -> ProviderError:
    """A dive ``ProviderError`` for any exception the SDK raised."""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, anthropic.APITimeoutError):
        err: ProviderError = ProviderTimeoutError(
            f"{provider}: request timed out", provider=provider
        )
        err.retryable = True
        return err
    if isinstance(exc, anthropic.APIConnectionError):
        env = "ANTHROPIC_BASE_URL" if provider == "anthropic" else None
        refused = connect_error(exc, provider, request_url(exc, provider), env)
        if refused is not None:
            return refused
        err = ProviderConnectionError(f"{provider}: connection failed: {exc}", provider=provider)
        err.retryable = True
        return err
    if isinstance(exc, anthropic.APIStatusError):
        return _status_error(exc, provider)
    if isinstance(exc, anthropic.APIError):
        return _body_error(exc, provider, getattr(exc, "body", None))
    if isinstance(exc, _TRANSPORT_ERRORS):  # the connection broke while reading the stream
        err = ProviderConnectionError(f"{provider}: connection broke: {exc!r}", provider=provider)
        err.retryable = True
        return err
    err = StreamInterruptedError(f"{provider}: the stream failed: {exc!r}", provider=provider)
    err.retryable = False
    return err


def _status_error(exc: anthropic.APIStatusError, provider: str) -> ProviderError:
    body: Any = exc.body
    info: dict[str, Any] = (
        sub(cast("dict[str, Any]", body), "error") if isinstance(body, dict) else {}
    )
    error_type = str(info.get("type") or "")
    message = str(info.get("message") or exc.message)
    status = exc.status_code
    headers = exc.response.headers
    cls = status_class(status) or _BY_TYPE.get(error_type) or ProviderError
    if status == 200 and error_type:  # an `event: error` on a 200 stream
        cls = _BY_TYPE.get(error_type, ProviderError)
    err = cls(
        f"{provider} returned {status} {error_type or 'error'}: {message}",
        provider=provider,
        status=status,
        request_id=exc.request_id or headers.get("request-id"),
        retry_after=retry_after(headers),
        error_type=error_type or None,
        body=body,
    )
    if status == 200:  # an error event on a stream: its type decides, unless the header says
        retryable = header_says_retry(headers, error_type in _RETRY_TYPES)
    else:
        retryable = status_retryable(status, headers)
    if status == 429 and _terminal_429(message) and not headers.get("retry-after"):
        retryable = False
    err.retryable = retryable
    return err


def _body_error(exc: anthropic.APIError, provider: str, body: Any) -> ProviderError:
    info: dict[str, Any] = {}
    if isinstance(body, dict):
        data = cast("dict[str, Any]", body)
        info = sub(data, "error") or data
    error_type = str(info.get("type") or "")
    cls = _BY_TYPE.get(error_type, ProviderError)
    err = cls(
        f"{provider} stream error {error_type or ''}: {info.get('message') or exc}".strip(),
        provider=provider,
        error_type=error_type or None,
        body=body,
    )
    err.retryable = error_type in _RETRY_TYPES
    return err
