"""``ExecutionResult``: what ``Executor.run`` returns, the way ``Agent.run`` reports a turn.

``status`` is ``completed`` (``output`` holds the validated response) or ``suspended``
(``suspension`` holds what a resume needs: ``suspension.pending_call_ids`` are the calls
waiting for an answer). The ``trace`` and the ``usage`` come with either. Failures still
raise (``ExecutorError``, ``ProviderError``): a batch job either gets its typed result, a
suspension to park, or an error to report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Literal

from pydantic import BaseModel
from typing_extensions import TypeVar

from dive.executor._suspend import Suspension
from dive.executor._trace import ExecutionTrace
from dive.llm import Usage

__all__ = ["ExecutionResult"]

ResponseT = TypeVar("ResponseT", bound=BaseModel, default=BaseModel)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionResult(Generic[ResponseT]):
    """One execution's outcome: the response or the suspension, with its trace and usage.

    Attributes:
        status: ``completed`` or ``suspended``.
        output: the validated response (None when suspended).
        suspension: what ``Executor.run(suspension=..., answers=...)`` resumes (None when
            completed).
        trace: the execution's trace.
    """

    status: Literal["completed", "suspended"]
    trace: ExecutionTrace = field(repr=False)
    output: ResponseT | None = None
    suspension: Suspension | None = field(default=None, repr=False)

    @property
    def usage(self) -> Usage:
        """Tokens and cost over every round of the execution."""
        return self.trace.usage
