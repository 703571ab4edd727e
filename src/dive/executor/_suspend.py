"""Suspension: a run that waits for a person, and its resume in any process.

The suspend tool's handler returns ``dive.tools.Suspend(prompt)``; when nothing commits in
that round, ``execute`` raises ``ExecutionSuspended`` carrying a ``Suspension`` (the loop's
``SuspensionState``, the history before the turn, the rounds left and what the run was
configured with). ``Executor.resume(suspension, answers)`` checks that it is resumed by the
same configuration and continues with each answer framed as a human answer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from dive.executor._errors import ExecutorError
from dive.executor._trace import ExecutionTrace
from dive.messages import Message
from dive.turns import SuspensionState

__all__ = ["ConfigDriftError", "ExecutionSuspended", "Suspension", "digest", "frame_answer"]

ANSWER_LIMIT = 16384
BEGIN, END = "<<<BEGIN HUMAN ANSWER>>>", "<<<END HUMAN ANSWER>>>"


@dataclass(frozen=True, slots=True, kw_only=True)
class Suspension:
    """What a suspended execution needs to resume (records only: names, ids, messages).

    Attributes:
        state: the loop's suspension state (pending calls, usage, messages).
        history: the conversation up to the suspension.
        round: the round it suspended in.
        remaining_rounds: model rounds left for the resumed run.
        provider: the provider it ran on (``resume`` refuses another).
        model: the model it ran on (``resume`` refuses another).
        config_digest: a digest of the executor's configuration (``resume`` refuses another).
        prompt: what the suspend tool asked the person.
    """

    state: SuspensionState
    history: tuple[Message, ...]
    round: int
    remaining_rounds: int
    provider: str
    model: str
    config_digest: str
    prompt: str = ""

    @property
    def pending_call_ids(self) -> tuple[str, ...]:
        """The calls waiting for an answer."""
        return tuple(p.id for p in self.state.pending_tool_calls)


class ExecutionSuspended(Exception):
    """The run waits for a person: answer with ``Executor.resume(e.suspension, answers)``.

    Args:
        suspension: what ``Executor.resume`` needs.
        trace: the execution's trace so far.
    """

    def __init__(self, suspension: Suspension, trace: ExecutionTrace) -> None:
        super().__init__(f"suspended waiting for an answer: {suspension.prompt}")
        self.suspension = suspension
        self.trace = trace


class ConfigDriftError(ExecutorError):
    """``resume`` was called on an executor configured differently from the suspended one."""


def digest(*parts: str) -> str:
    """A short stable digest of the configuration parts."""
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


def frame_answer(answer: str) -> str:
    """A person's answer between delimiters (theirs removed), capped at 16 KiB."""
    text = answer.replace(BEGIN, "").replace(END, "").strip()
    if not text:
        text = "(the human did not provide an answer)"
    raw = text.encode()
    if len(raw) > ANSWER_LIMIT:
        text = raw[:ANSWER_LIMIT].decode(errors="ignore") + "…[truncated]"
    return f"{BEGIN}\n{text}\n{END}"
