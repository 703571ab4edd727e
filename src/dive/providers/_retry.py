"""The one retry policy of the provider layer, for every provider.

Delay before retry ``k`` (0-based): ``min(initial_backoff · 2^k, max_backoff)`` plus up to
``jitter`` seconds; a server's ``retry-after-ms`` / ``retry-after`` replaces the exponential
part (capped at ``max_backoff``). Retried: rate limits, overload, gateway timeouts, connection
errors and timeouts, and in-stream ``overloaded_error`` / ``rate_limit_error`` / ``api_error``.
``x-should-retry`` overrides the status rule, except that a terminal 429 (spend or balance
limit) is never retried. Retries happen only inside the retry window: before the first content
event reached the consumer, so output is never duplicated.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass
from typing import Any

from dive.errors import ProviderError

__all__ = ["RetryPolicy", "retry_after", "transport_errors"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How often and how long to retry a failed model call."""

    max_retries: int = 5
    initial_backoff: float = 1.0
    max_backoff: float = 60.0
    jitter: float = 0.5

    def delay(self, attempt: int, error: ProviderError) -> float:
        """Seconds to wait before retry ``attempt`` (0-based) after ``error``."""
        base = min(self.initial_backoff * (2**attempt), self.max_backoff)
        if error.retry_after is not None and error.retry_after >= 0:
            base = min(error.retry_after, self.max_backoff)
        return base + random.uniform(0, self.jitter)

    def should_retry(self, attempt: int, error: ProviderError) -> bool:
        """Whether to retry after ``attempt`` failed attempts (0-based) with ``error``."""
        return attempt < self.max_retries and error.retryable


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
