"""Turn records: what happened in a turn, persisted by sessions and returned by runs.

Records hold names and ids, never live objects, and round-trip exactly through JSON.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, ConfigDict

from dive.llm import Usage
from dive.messages import Message
from dive.messages.codec import FORBID_EXTRA, JSONValue, decode, dumps, empty, to_jsonable

__all__ = [
    "SCHEMA_VERSION",
    "ApprovalKind",
    "ApprovalRecord",
    "CallState",
    "IncompleteReason",
    "NextStep",
    "PendingToolCall",
    "Persistence",
    "SuspensionState",
    "ToolCallRecord",
    "Turn",
    "TurnOrigin",
    "TurnOutcome",
    "TurnStatus",
    "new_turn_id",
]

SCHEMA_VERSION = 1


def _supported_schema(value: int) -> int:
    """Refuse, when decoding, a record written by a newer dive."""
    if value > SCHEMA_VERSION:
        raise ValueError(
            f"record schema {value} is newer than this dive supports ({SCHEMA_VERSION}); "
            "upgrade dive-agents to read it"
        )
    return value


_RecordSchema = Annotated[int, AfterValidator(_supported_schema)]

CallState = Literal["not_started", "running", "waiting", "completed", "unknown"]
TurnStatus = Literal["running", "completed", "suspended", "incomplete"]
Persistence = Literal["none", "saved", "failed", "unknown"]
NextStep = Literal["input", "continue", "reconcile"]
IncompleteReason = Literal[
    "canceled",
    "deadline",
    "provider_error",
    "stream_interrupted",
    "hook_abort",
    "callback_error",
    "error",
    "output_limit",
    "context_limit",
    "iteration_limit",
    "provider_stopped",
    "pause",
    "process_exit",
    "usage_limit",
]


def new_turn_id() -> str:
    """``"turn_"`` + 32 hex digits."""
    return "turn_" + secrets.token_hex(16)


ApprovalKind = Literal["allow", "deny", "ask"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRecord:
    """One decision of the approval gate about a call: an entry of the turn's audit log.

    Attributes:
        decision: ``allow`` (it may run), ``deny`` (answered ``is_error``, not run) or ``ask``
            (held unstarted; the turn suspends until a resume settles it).
        decided_by: who decided: ``rule``, ``mode``, ``session_grant``, ``dialog`` (the
            permission engine), ``hook`` (a ``pre_tool_use`` verdict), ``policy`` (any other
            approval policy) or ``resume`` (a ``ToolApproval`` supplied on resume).
        rule: the rule that decided (or, for a dialog answer, the rule that asked), if any.
        message: the denial text or the prompt of an ask, if any.
        at: when the decision was made.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    decision: ApprovalKind
    decided_by: str
    rule: str | None = None
    message: str | None = None
    at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallRecord:
    """The state of one tool call of a turn.

    ``approvals`` is the call's audit log: every decision the approval gate made about it, in
    order (an ``ask`` then the ``resume`` that settled it, for example). Calls that passed the
    default policy without a decision have none.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    id: str
    name: str
    state: CallState
    reconcile: bool = False
    error: str | None = None
    origin: str | None = None
    tags: tuple[str, ...] = ()
    effect: str | None = None
    risk: str | None = None
    approvals: tuple[ApprovalRecord, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnOutcome:
    """How an incomplete turn ended and what to do next."""

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    reason: IncompleteReason
    next: NextStep
    error: str | None = None
    hook: str | None = None
    usage_unknown: bool = False
    tool_calls: tuple[ToolCallRecord, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data."""
        return to_jsonable(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnOrigin:
    """What started the turn: new input, a continuation or delivered background results.

    Attributes:
        kind: ``input``, ``continue`` or ``background``.
        turn_id: the turn whose background work is delivered (``background``).
        parent_turn_id: the turn of the tool call this run was started from (a subagent's
            turn names the turn that called it), or None.
        parent_tool_call_id: that tool call's id, or None.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    kind: Literal["input", "continue", "background"] = "input"
    turn_id: str | None = None
    parent_turn_id: str | None = None
    parent_tool_call_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingToolCall:
    """A call waiting for an external result or approval."""

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    id: str
    name: str
    input: Mapping[str, JSONValue] = field(default_factory=empty)
    prompt: str = ""
    reason: Literal["input_required", "auth_required", "approval_required"] = "input_required"
    metadata: Mapping[str, JSONValue] = field(default_factory=empty)
    halts_batch: bool = False
    started: bool = True
    call_again: bool = False
    """Resuming calls the tool again with the supplied answer (``Suspend(call_again=True)``)
    rather than taking the supplied value as the call's result."""

    def input_as(self, model: type[Any]) -> Any:
        """The call's input validated as a pydantic model."""
        return model.model_validate(dict(self.input))


@dataclass(frozen=True, slots=True, kw_only=True)
class SuspensionState:
    """Everything needed to resume a suspended turn, JSON round-trippable."""

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    turn_id: str
    pending_tool_calls: tuple[PendingToolCall, ...] = ()
    completed_tool_calls: tuple[str, ...] = ()
    turn_messages: tuple[Message, ...] = ()
    batch_halted: bool = False
    ending_calls: tuple[str, ...] = ()
    usage: Usage = field(default_factory=Usage)
    origin: TurnOrigin = field(default_factory=lambda: TurnOrigin())
    accepted: Mapping[str, JSONValue] = field(default_factory=empty)
    context: Mapping[str, str] = field(default_factory=empty)
    model_calls: int = 0
    executed_tool_calls: int = 0
    iterations: int = 0
    budget_start: int = 0
    tool_calls: tuple[ToolCallRecord, ...] = ()

    def to_json(self) -> str:
        """Compact JSON text."""
        return dumps(self)

    @classmethod
    def from_json(cls, text: str | bytes) -> SuspensionState:
        """Decode and validate."""
        return decode(SuspensionState, text)


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """The record of one turn."""

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    schema: _RecordSchema = SCHEMA_VERSION
    id: str
    status: TurnStatus
    revision: int = 0
    origin: TurnOrigin = field(default_factory=TurnOrigin)
    messages: tuple[Message, ...] = ()
    tool_calls: tuple[ToolCallRecord, ...] = ()
    usage: Usage = field(default_factory=Usage)
    outcome: TurnOutcome | None = None
    suspension: SuspensionState | None = None
    persistence: Persistence = "none"
    superseded: bool = False
    created_at: datetime | None = None
    finished_at: datetime | None = None
    model_calls: int = 0
    executed_tool_calls: int = 0
    iterations: int = 0
    budget_start: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (defaults omitted)."""
        return to_jsonable(self)

    def to_json(self) -> str:
        """Compact JSON text."""
        return dumps(self)

    @classmethod
    def from_json(cls, text: str | bytes | Mapping[str, Any]) -> Turn:
        """Decode and validate; raises ``MessageValidationError`` naming the field path."""
        return decode(Turn, text if isinstance(text, str | bytes) else dict(text))
