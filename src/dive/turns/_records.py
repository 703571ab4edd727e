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
from dive.turns._counters import TurnCounters

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

SCHEMA_VERSION = 2


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

    Attributes:
        id: the model's tool call id.
        name: the tool's name as the model called it.
        state: ``not_started``, ``running`` (records only), ``waiting``, ``completed`` or
            ``unknown`` (started, result not recorded).
        reconcile: an ``unknown`` call whose tool is not read-only: check whether it took
            effect before repeating it.
        error: the call's error text, if it failed or was refused.
        origin: where the tool came from (``mcp:<server>``, a toolset), if known.
        tags: the tool's tags.
        effect: the tool's effect type (``read_only``, ``write``, ...), if declared.
        risk: the tool's risk level, if declared.
        approvals: the approval gate's decisions about the call, in order.
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
    """How an incomplete turn ended and what to do next.

    Attributes:
        reason: why the turn ended (``canceled``, ``deadline``, ``provider_error``, ...; the
            turn contract lists each with its meaning).
        next: the advised next step: ``input`` (send new input), ``continue`` (run with
            ``continue_turn=True``) or ``reconcile`` (check calls of unknown outcome first).
        error: the error text, for reasons that have one (an ``on_incomplete_turn`` hook may
            rewrite it, e.g. to redact).
        hook: the hook point whose ``HookAbort`` ended the turn (``hook_abort``).
        usage_unknown: the stream died before its usage frame, so usage is incomplete.
        tool_calls: every call of the batch in flight when the turn ended.
    """

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
    """A call waiting for an external result or approval.

    Attributes:
        id: the tool call id to answer in ``run(tool_results={id: ...})``.
        name: the tool's name.
        input: the call's raw JSON input (``input_as(Model)`` validates it).
        prompt: what the tool (or the approval gate) asks the person.
        reason: ``input_required``, ``auth_required`` or ``approval_required`` (held at the
            approval gate).
        metadata: the tool's ``Suspend`` metadata, JSON.
        halts_batch: the call's tool halts its batch on failure.
        started: False when the call is held at the approval gate and has not run.
    """

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
        """The call's input validated as a pydantic model.

        Args:
            model: the pydantic model class to validate ``input`` with.
        """
        return model.model_validate(dict(self.input))


@dataclass(frozen=True, slots=True, kw_only=True)
class SuspensionState:
    """Everything needed to resume a suspended turn, JSON round-trippable.

    A stateless caller keeps it (``to_json``) and passes it back as ``run(suspension=...)``;
    a session stores it in the turn record.

    Attributes:
        turn_id: the suspended turn's id.
        pending_tool_calls: the calls waiting for a result or an approval.
        completed_tool_calls: ids of the calls of the batch that already have results.
        turn_messages: the turn's messages so far (input, responses, partial results).
        batch_halted: a halting call failed, so the rest of the batch is not run.
        ending_calls: ids of calls that end the turn when answered (terminal tools).
        usage: the turn's usage so far.
        origin: what started the turn.
        accepted: results already accepted on a partial resume, by call id.
        context: hook ``additional_context`` text waiting to follow the results, by call id.
        model_calls: model calls made so far in the turn.
        executed_tool_calls: tool calls run so far in the turn.
        iterations: loop iterations so far.
        budget_start: the ``model_calls`` count at which the current budget began (a
            continuation grants a fresh one).
        tool_calls: the record of every call in the turn.

    The four counts read as one value: :attr:`counters`.
    """

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

    @property
    def counters(self) -> TurnCounters:
        """The four counts (``model_calls`` … ``budget_start``) as one :class:`TurnCounters`."""
        return TurnCounters.of(self)

    def to_json(self) -> str:
        """Compact JSON text."""
        return dumps(self)

    @classmethod
    def from_json(cls, text: str | bytes) -> SuspensionState:
        """Decode and validate.

        Args:
            text: JSON text from :meth:`to_json`.
        """
        return decode(SuspensionState, text)


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """The record of one turn.

    Attributes:
        schema: the record format's version (a newer one than this dive reads is refused).
        id: ``"turn_"`` + 32 hex digits, stable across suspend and resume.
        status: ``running``, ``completed``, ``suspended`` or ``incomplete``.
        revision: the session revision the record was written at.
        origin: what started the turn.
        messages: the turn's closed messages (a resumed or continued turn holds all of it).
        tool_calls: the record of every call in the turn.
        usage: the turn's usage, never None.
        outcome: how the turn ended (incomplete turns only).
        suspension: what resuming needs (suspended turns only).
        persistence: ``none``, ``saved``, ``failed`` or ``unknown``: whether the record
            reached the session.
        superseded: new input started another turn after this incomplete or suspended one.
        created_at: when the turn began.
        finished_at: when it ended.
        model_calls: model calls made in the turn.
        executed_tool_calls: tool calls run in the turn.
        iterations: loop iterations of the turn.
        budget_start: the ``model_calls`` count at which the current budget began.

    The four counts read as one value: :attr:`counters`.
    """

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

    @property
    def counters(self) -> TurnCounters:
        """The four counts (``model_calls`` … ``budget_start``) as one :class:`TurnCounters`."""
        return TurnCounters.of(self)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (defaults omitted)."""
        return to_jsonable(self)

    def to_json(self) -> str:
        """Compact JSON text."""
        return dumps(self)

    @classmethod
    def from_json(cls, text: str | bytes | Mapping[str, Any]) -> Turn:
        """Decode and validate; raises ``MessageValidationError`` naming the field path.

        Args:
            text: JSON text, or the plain data of :meth:`to_dict`.
        """
        return decode(Turn, text if isinstance(text, str | bytes) else dict(text))
