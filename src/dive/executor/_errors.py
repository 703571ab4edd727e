"""The executor's errors and control-flow signals.

``ExecutorConfigError`` is raised at construction; every run failure is an ``ExecutorError``
carrying the run's ``trace`` and ``messages``. ``AbortExecution`` is a signal a tool handler
raises to stop the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dive.errors import DiveError, ProviderError, UserError

if TYPE_CHECKING:
    from dive.executor._trace import ExecutionTrace
    from dive.messages import Message

__all__ = [
    "AbortExecution",
    "ExecutorConfigError",
    "ExecutorError",
    "ExecutorIncomplete",
    "ExecutorRefused",
    "MaxRoundsExceeded",
    "ProviderRetriesExhausted",
    "ResponseParseError",
    "ResultValidationError",
]


class ExecutorConfigError(UserError):
    """An executor option or argument is invalid (a ``ValueError``); nothing ran."""


class ExecutorError(DiveError):
    """An ``execute`` failed. ``trace`` and ``messages`` show how far it got.

    Args:
        message: what went wrong and what to do.
        trace: the execution's trace so far, if one was started.
        messages: the conversation so far.
    """

    def __init__(
        self,
        message: str,
        *,
        trace: ExecutionTrace | None = None,
        messages: Sequence[Message] = (),
    ) -> None:
        super().__init__(message)
        self.trace = trace
        self.messages: tuple[Message, ...] = tuple(messages)


class MaxRoundsExceeded(ExecutorError):
    """The round budget (``max_rounds``) ran out before a result was committed."""


class ExecutorIncomplete(ExecutorError):
    """The model stopped for a reason the executor cannot continue from (``reason``).

    Args:
        message: what went wrong and what to do.
        reason: why the model stopped (``output_limit``, ``context_limit``, ``provider_stopped``,
            ...).
        kwargs: ``trace`` and ``messages`` (see :class:`ExecutorError`).
    """

    def __init__(self, message: str, *, reason: str, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.reason = reason


class ExecutorRefused(ExecutorError):
    """The model refused the request."""


class ResultValidationError(ExecutorError):
    """A result validator raised (not a finding): the run was aborted."""


class ResponseParseError(ExecutorError):
    """Text mode: the answer could not be parsed after the repair attempts."""


class AbortExecution(Exception):
    """Raise from a tool handler to stop the run; ``execute`` raises ``ExecutorError``.

    Args:
        reason: why the run stops (the ``ExecutorError``'s message).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ProviderRetriesExhausted(ProviderError):
    """A model call kept failing with retryable errors until the retry policy gave up.

    ``transient`` is True and ``requeue_after`` (seconds) suggests when a job queue should
    try the whole execution again; the last error is the ``__cause__``. Like an
    ``ExecutorError`` it carries the execution's ``trace`` and ``messages``.

    Args:
        message: what kept failing and what to do.
        last: the last provider error (also the ``__cause__``).
    """

    transient = True
    requeue_after = 300.0
    trace: ExecutionTrace | None = None
    messages: tuple[Message, ...] = ()

    def __init__(self, message: str, last: ProviderError) -> None:
        super().__init__(
            message,
            provider=last.provider,
            status=last.status,
            request_id=last.request_id,
            retry_after=last.retry_after,
            error_type=last.error_type,
        )
