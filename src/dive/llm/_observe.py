"""Retry notices: how a provider's retry loop tells the running model call it is retrying.

The agent loop opens ``observe_retries(callback)`` around one model call; a provider's retry
loop calls ``report_retry`` before it sleeps. The observer lives in a context variable, so it
reaches the provider through ``await`` without a parameter on every model, and a retry in one
run never reaches another run's observer. An observer that raises is logged, never fatal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["RetryNotice", "observe_retries", "report_retry"]

log = logging.getLogger("dive.llm")


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryNotice:
    """One failed attempt of a model call that is about to be retried.

    Attributes:
        attempt: the attempt that failed (1 for the first).
        error_type: the dive error class of the failure (``RateLimitedError``…).
        message: the error's text (redact it before recording it anywhere).
        status: the HTTP status, when there was one.
        delay: seconds the provider waits before the next attempt.
    """

    attempt: int
    error_type: str
    message: str
    status: int | None
    delay: float


_OBSERVER: ContextVar[Callable[[RetryNotice], None] | None] = ContextVar(
    "dive_retry_observer", default=None
)


class observe_retries:  # used like a function: ``with observe_retries(cb):``
    """Send the retry notices of model calls made inside this block to ``callback``.

    A small class rather than a generator: it runs once per model call, on the hot path.

    Args:
        callback: receives each :class:`RetryNotice`; None stops observing inside the block.
    """

    __slots__ = ("_callback", "_token")

    def __init__(self, callback: Callable[[RetryNotice], None] | None) -> None:
        self._callback = callback

    def __enter__(self) -> None:
        self._token = _OBSERVER.set(self._callback)

    def __exit__(self, *exc: object) -> None:
        _OBSERVER.reset(self._token)


def report_retry(notice: RetryNotice) -> None:
    """Tell the current observer (if any) about a retry; its failures are logged.

    Args:
        notice: what was retried, after which error, and the delay.
    """
    callback = _OBSERVER.get()
    if callback is None:
        return
    try:
        callback(notice)
    except Exception:
        log.exception("a retry observer failed")
