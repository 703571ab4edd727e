"""The one retry policy of the provider layer, and the one classification every provider shares.

Retried statuses (``RETRY_STATUSES``): 408, 409, 429, 500, 502, 503, 504, 529 — the set the
official SDKs retry — plus connection errors, timeouts and in-stream ``overloaded_error`` /
``rate_limit_error`` / ``api_error`` (or their OpenAI / Gemini equivalents). A response's
``x-should-retry`` header wins over the status rule (``true`` forces a retry, ``false`` forbids
one), except that a terminal 429 (spend, quota or balance limit) is never retried.

Delay before retry ``k`` (0-based): ``min(initial_backoff · 2^k, max_backoff)`` plus up to
``jitter`` seconds; a server's ``retry-after-ms`` / ``retry-after`` replaces the exponential
part (capped at ``max_backoff``). A connection that could not be made at all (refused, no route,
name not resolved) has its own small budget, ``connect_retries`` with ``connect_backoff``, so a
server that is not running is reported within a second or two rather than after the full
backoff. Retries happen only inside the retry window: before the first content event reached
the consumer, so output is never duplicated.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass
from typing import Any

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
)

__all__ = [
    "CONNECT_FAILED",
    "RETRY_STATUSES",
    "RetryPolicy",
    "connect_error",
    "header_says_retry",
    "request_url",
    "retry_after",
    "status_class",
    "status_retryable",
    "transport_errors",
]

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""HTTP statuses retried by every provider (unless ``x-should-retry: false``)."""

CONNECT_FAILED = "connect_failed"
"""``error_type`` of a ``ProviderConnectionError`` whose connection was never established."""

_CLASS_BY_STATUS: dict[int, type[ProviderError]] = {
    400: InvalidRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    408: ProviderTimeoutError,
    413: InvalidRequestError,
    422: InvalidRequestError,
    429: RateLimitedError,
    503: OverloadedError,
    504: ProviderTimeoutError,
    529: OverloadedError,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How often and how long to retry a failed model call.

    Attributes:
        max_retries: retries after the first attempt for retryable errors.
        initial_backoff: seconds before the first retry; doubled for each further one.
        max_backoff: the cap on one delay (also on a server's ``retry-after``).
        jitter: up to this many random seconds added to each delay.
        connect_retries: retries when the connection could not be made at all (refused,
            unreachable, unresolved); small, so a server that is not running is reported fast.
        connect_backoff: seconds before the first such retry, doubled for each further one
            (its jitter is at most ``connect_backoff``).
    """

    max_retries: int = 5
    initial_backoff: float = 1.0
    max_backoff: float = 60.0
    jitter: float = 0.5
    connect_retries: int = 2
    connect_backoff: float = 0.2

    def delay(self, attempt: int, error: ProviderError) -> float:
        """Seconds to wait before retry ``attempt`` (0-based) after ``error``.

        Args:
            attempt: the retry's number, from 0.
            error: the failure being retried (its ``retry_after`` is honoured up to
                ``max_backoff``).
        """
        if _connect_failed(error):
            base = min(self.connect_backoff * (2**attempt), self.max_backoff)
            return base + random.uniform(0, min(self.jitter, self.connect_backoff))
        base = min(self.initial_backoff * (2**attempt), self.max_backoff)
        if error.retry_after is not None and error.retry_after >= 0:
            base = min(error.retry_after, self.max_backoff)
        return base + random.uniform(0, self.jitter)

    def should_retry(self, attempt: int, error: ProviderError) -> bool:
        """Whether to retry after ``attempt`` failed attempts (0-based) with ``error``.

        Args:
            attempt: how many retries were made already.
            error: the latest failure (only ``retryable`` errors are retried).
        """
        limit = self.connect_retries if _connect_failed(error) else self.max_retries
        return attempt < limit and error.retryable


def _connect_failed(error: ProviderError) -> bool:
    return isinstance(error, ProviderConnectionError) and error.error_type == CONNECT_FAILED


def status_class(status: int) -> type[ProviderError] | None:
    """The ``ProviderError`` subclass for an HTTP status, or None when no subclass fits."""
    return _CLASS_BY_STATUS.get(status)


def header_says_retry(headers: Any, default: bool) -> bool:
    """``x-should-retry`` when the response carries ``true`` or ``false``, else ``default``."""
    should = headers.get("x-should-retry") if headers is not None else None
    if should in ("true", "false"):
        return should == "true"
    return default


def status_retryable(status: int, headers: Any) -> bool:
    """Whether an HTTP error status is retried; ``x-should-retry`` wins when present."""
    return header_says_retry(headers, status in RETRY_STATUSES)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    todo = [exc]
    while todo:
        current = todo.pop()
        if any(current is s for s in seen):
            continue
        seen.append(current)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        inner: Any = getattr(current, "exceptions", None)
        if isinstance(inner, tuple | list):
            todo.extend(e for e in inner if isinstance(e, BaseException))  # pyright: ignore[reportUnknownVariableType]
    return seen


def connect_error(
    exc: BaseException, provider: str, url: str, env: str | None
) -> ProviderConnectionError | None:
    """A ``ProviderConnectionError`` if ``exc`` says the connection was never made, else None.

    Args:
        exc: the exception the SDK raised.
        provider: the provider label carried by the error.
        url: the URL the request went to (the base URL when the request is unknown).
        env: the environment variable that sets the base URL, named in the advice.
    """
    try:
        from httpx2 import ConnectError
    except ImportError:  # pragma: no cover - depends on the SDK version
        connect: tuple[type[BaseException], ...] = ()
    else:
        connect = (ConnectError,)
    chain = _chain(exc)
    refused = any(isinstance(e, ConnectionRefusedError) for e in chain)
    if not refused and not any(isinstance(e, connect) for e in chain):
        return None
    if refused:
        what = "connection refused"
    else:
        causes = [e for e in chain if isinstance(e, OSError)] or [exc]
        what = str(causes[-1]) or type(causes[-1]).__name__
    where = f"check {env} or the base_url you passed" if env else "check the base_url you passed"
    err = ProviderConnectionError(
        f"could not connect to {url}: {what} — is the server running? {where}",
        provider=provider,
        error_type=CONNECT_FAILED,
    )
    err.retryable = True
    return err


def request_url(exc: BaseException, fallback: str) -> str:
    """The URL (without its query) of the request ``exc`` carries, else ``fallback``."""
    for candidate in _chain(exc):
        try:
            request: Any = getattr(candidate, "request", None)
        except RuntimeError:  # httpx raises when no request is attached
            continue
        url: Any = getattr(request, "url", None)
        if url is not None:
            return str(url).split("?", 1)[0]
    return fallback


def retry_after(headers: Any) -> float | None:
    """Seconds the server asked to wait, or None when it said nothing usable.

    ``retry-after-ms`` wins; ``retry-after`` may be seconds or an HTTP date.
    """
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, parsed.timestamp() - time.time())


def transport_errors() -> tuple[type[BaseException], ...]:
    """The SDK HTTP client's errors that surface while a stream is being read."""
    try:
        from httpx2 import TransportError
    except ImportError:  # pragma: no cover - depends on the SDK version
        return (ConnectionError,)
    return (ConnectionError, TransportError)
