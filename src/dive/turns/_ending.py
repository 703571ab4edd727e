"""How a turn's driving ends: one closed union, matched with ``match`` + ``assert_never``.

A step of the driver returns one of these (or nothing, to go on); ``end_turn`` turns it into
the one ending of the invocation: close, end hook, write, ``turn_ended``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dive.messages import ToolCall
from dive.turns._records import IncompleteReason

__all__ = ["Completed", "Ending", "Incomplete", "ResumeRejected", "Suspended"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Completed:
    """The model finished. ``unrun`` are calls of a refusal, answered "Not run".

    Attributes:
        unrun: calls of a refusal, answered "Not run".
    """

    kind: Literal["completed"] = "completed"
    unrun: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Suspended:
    """The open tool group waits for results; ``new`` when this invocation suspended it.

    Attributes:
        new: True when this invocation suspended the group (False: a partial resume left it
            waiting).
    """

    kind: Literal["suspended"] = "suspended"
    new: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Incomplete:
    """The turn stopped early.

    Attributes:
        reason: the incomplete reason.
        error: what ended the turn (``RunResult.error``), None for model-stop reasons.
        error_text: the outcome's ``error`` when it is not ``str(error)`` (a raw stop value).
        unrun: calls of the last response that will not run (answered "Not run").
        hook: the hook point whose ``HookAbort`` ended the turn.
    """

    kind: Literal["incomplete"] = "incomplete"
    reason: IncompleteReason
    error: BaseException | None = None
    error_text: str | None = None
    unrun: tuple[ToolCall, ...] = ()
    hook: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumeRejected:
    """A partial resume failed: the stored turn stays suspended; ``error`` says why.

    Attributes:
        error: why the partial resume failed.
    """

    kind: Literal["resume_rejected"] = "resume_rejected"
    error: BaseException


Ending = Completed | Suspended | Incomplete | ResumeRejected
