"""The inbox: every human wait across a store's sessions, and decisions about them.

A wait is a pending call of a suspended turn: an approval held at the gate, an ``AskUser``
question, an MCP elicitation (a form, or a URL to visit), or any other tool's
``Suspend``. ``pending_waits`` lists them; ``needs_reconcile`` lists the calls recorded
``unknown`` in sessions whose latest outcome says ``reconcile``.

A decision is a ``ToolApproval`` or an answer. With an agent, the viewer resumes the turn
with it (``agent.run(tool_results=...)``). Without one, ``record_decision`` writes it into
the suspended turn's pending call (``metadata["dive.decision"]``) with the rules a resume
has: the call must be pending in the named open turn, the same decision again changes
nothing, a different one is refused (``ConflictingToolResultError``), and the write is
guarded by the session revision (``RevisionConflictError`` when the session moved). The
process that owns the session applies what was recorded with ``apply_recorded_decisions``
(or passes ``recorded_decisions(turn)`` as ``tool_results``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal, cast

from dive.agent import Agent, RunResult, ToolApproval
from dive.errors import (
    ConflictingToolResultError,
    NoSuspendedTurnError,
    RevisionConflictError,
    ToolCallNotPendingError,
)
from dive.messages import JSONValue
from dive.sessions import SessionSnapshot, SessionStore
from dive.turns import PendingToolCall, ToolCallRecord, Turn

__all__ = [
    "DECISION_KEY",
    "Decision",
    "Reconcile",
    "Wait",
    "WaitKind",
    "apply_recorded_decisions",
    "check_pending",
    "decision_json",
    "merge_recorded",
    "needs_reconcile",
    "pending_waits",
    "record_decision",
    "recorded_decisions",
    "wait_kind",
]

DECISION_KEY = "dive.decision"
"""``metadata`` key of a pending call holding a decision recorded for its owning process."""

WaitKind = Literal["approval", "ask_user", "elicitation", "auth", "input"]
Decision = ToolApproval | JSONValue
_SCAN = 500


def wait_kind(call: PendingToolCall) -> WaitKind:
    """What the call waits for: an approval, an AskUser answer, an elicitation, a visit, input."""
    kind = call.metadata.get("type")
    if call.reason == "approval_required":
        return "approval"
    if kind == "ask_user":
        return "ask_user"
    if kind == "mcp_elicitation":
        return "auth" if call.metadata.get("mode") == "url" else "elicitation"
    return "auth" if call.reason == "auth_required" else "input"


@dataclass(frozen=True, slots=True, kw_only=True)
class Wait:
    """One pending call waiting for a person.

    Attributes:
        session_id: the session.
        turn_id: the suspended turn.
        revision: the session revision it was read at.
        call: the pending call (prompt, input, reason, metadata).
        kind: what it waits for (see ``wait_kind``).
        since: when the turn suspended.
        recorded: a decision recorded for the owning process, as JSON, if any.
    """

    session_id: str
    turn_id: str
    revision: int
    call: PendingToolCall
    kind: WaitKind
    since: datetime | None
    recorded: JSONValue = None

    @property
    def prompt(self) -> str:
        """The question, or a default naming the tool."""
        if self.call.prompt:
            return self.call.prompt
        verb = "Allow calling" if self.kind == "approval" else "Answer for"
        return f"{verb} {self.call.name}?"

    @property
    def arguments(self) -> str:
        """The call's input as indented JSON."""
        return json.dumps(dict(self.call.input), indent=2, ensure_ascii=False, sort_keys=True)

    @property
    def choices(self) -> list[str]:
        """An AskUser question's choices (empty otherwise)."""
        raw = self.call.metadata.get("choices")
        return [str(c) for c in cast(list[Any], raw)] if isinstance(raw, list) else []

    @property
    def fields(self) -> list[tuple[str, str, bool]]:
        """An elicitation form's fields: ``(name, JSON type, required)``."""
        schema = self.call.metadata.get("requested_schema")
        if not isinstance(schema, dict):
            return []
        props = schema.get("properties")
        required = schema.get("required")
        names = set(cast(list[str], required)) if isinstance(required, list) else set[str]()
        if not isinstance(props, dict):
            return []
        return [
            (name, str(cast(dict[str, Any], spec).get("type", "string")), name in names)
            for name, spec in props.items()
            if isinstance(spec, dict)
        ]

    @property
    def url(self) -> str | None:
        """The URL an auth wait asks the person to visit, if any."""
        url = self.call.metadata.get("url")
        return url if isinstance(url, str) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Reconcile:
    """A call recorded ``unknown`` in a session whose latest outcome says ``reconcile``.

    Attributes:
        session_id: the session.
        turn_id: the turn the call belongs to.
        record: the call's record (``unknown``: it may have taken effect).
        reason: why the turn ended (the outcome's reason).
        since: when the turn ended, if recorded.
    """

    session_id: str
    turn_id: str
    record: ToolCallRecord
    reason: str
    since: datetime | None


def _waits(session_id: str, snap: SessionSnapshot) -> list[Wait]:
    turn = snap.open_turn
    if turn is None or turn.status != "suspended" or turn.suspension is None:
        return []
    return [
        Wait(
            session_id=session_id,
            turn_id=turn.id,
            revision=snap.revision,
            call=p,
            kind=wait_kind(p),
            since=turn.finished_at or turn.created_at,
            recorded=p.metadata.get(DECISION_KEY),
        )
        for p in turn.suspension.pending_tool_calls
    ]


async def pending_waits(store: SessionStore, *, session_id: str | None = None) -> list[Wait]:
    """Every pending call of every suspended session (or of ``session_id``), oldest first.

    Args:
        store: the session store to scan.
        session_id: only this session's waits; None: every suspended session's.
    """
    if session_id is not None:
        return _waits(session_id, await store.load(session_id))
    out: list[Wait] = []
    for info in await store.list(limit=_SCAN, suspended=True):
        out.extend(_waits(info.id, await store.load(info.id)))
    epoch = datetime.min.replace(tzinfo=UTC)
    return sorted(out, key=lambda w: w.since or epoch)


async def needs_reconcile(store: SessionStore) -> list[Reconcile]:
    """Calls recorded ``unknown`` where the session's latest outcome advises ``reconcile``.

    Args:
        store: the session store to scan.
    """
    out: list[Reconcile] = []
    for info in await store.list(limit=_SCAN):
        snap = await store.load(info.id)
        turn, outcome = snap.open_turn, snap.latest_outcome
        if turn is None or outcome is None or outcome.next != "reconcile":
            continue
        for record in turn.tool_calls:
            if record.state == "unknown":
                out.append(
                    Reconcile(
                        session_id=info.id,
                        turn_id=turn.id,
                        record=record,
                        reason=outcome.reason,
                        since=turn.finished_at,
                    )
                )
    return out


def decision_json(value: Decision) -> JSONValue:
    """A decision as the JSON recorded (and compared for idempotency)."""
    if isinstance(value, ToolApproval):
        return {
            "approved": value.approved,
            "message": value.message,
            "for_session": value.for_session,
        }
    return {"answer": value}


def _decision(data: JSONValue) -> Decision:
    if isinstance(data, dict) and "approved" in data:
        message = data.get("message")
        return ToolApproval(
            approved=data["approved"] is True,
            message=message if isinstance(message, str) else None,
            for_session=data.get("for_session") is True,
        )
    return cast(dict[str, JSONValue], data).get("answer") if isinstance(data, dict) else data


def check_pending(snap: SessionSnapshot, turn_id: str, call_id: str) -> PendingToolCall:
    """The pending call ``call_id`` of the open suspended turn ``turn_id``, else raise.

    Raises:
        NoSuspendedTurnError: the session has no suspended turn.
        RevisionConflictError: another turn is open now.
        ToolCallNotPendingError: the call is not waiting (any more).
    """
    turn = snap.open_turn
    if turn is None or turn.status != "suspended" or turn.suspension is None:
        raise NoSuspendedTurnError(
            f"nothing is waiting in this session any more (turn {turn_id} is no longer "
            "suspended); reload to see what happened"
        )
    if turn.id != turn_id:
        raise RevisionConflictError(
            f"turn {turn_id} is not the open turn (turn {turn.id} is); reload the page"
        )
    for p in turn.suspension.pending_tool_calls:
        if p.id == call_id:
            return p
    raise ToolCallNotPendingError(
        f"tool call {call_id!r} is not waiting in turn {turn_id} any more; reload the page"
    )


def _check_conflict(snap: SessionSnapshot, call: PendingToolCall, value: JSONValue) -> bool:
    """True when ``value`` was already decided; raise when a different decision was."""
    earlier = call.metadata.get(DECISION_KEY)
    if earlier is None:
        return False
    if isinstance(earlier, dict) and earlier.get("value") == value:
        return True
    raise ConflictingToolResultError(
        f"a different decision for tool call {call.id!r} was already recorded; it waits for "
        "the process that owns the session to apply it"
    )


async def record_decision(
    store: SessionStore, session_id: str, *, turn_id: str, call_id: str, value: Decision
) -> bool:
    """Record ``value`` for the pending call, for the owning process to apply.

    Args:
        store: the session store.
        session_id: the session.
        turn_id: the suspended turn the decision is about (guards against a newer turn).
        call_id: the pending call.
        value: a ``ToolApproval`` or an answer (JSON).

    Returns:
        True when it was written, False when the same decision was already recorded.

    Raises:
        NoSuspendedTurnError, RevisionConflictError, ToolCallNotPendingError: the call is
            not waiting in that turn (nothing written).
        ConflictingToolResultError: a different decision was recorded (nothing written).
    """
    snap = await store.load(session_id)
    pending = check_pending(snap, turn_id, call_id)
    as_json = decision_json(value)
    if _check_conflict(snap, pending, as_json):
        return False
    turn = snap.open_turn
    assert turn is not None
    assert turn.suspension is not None
    entry: JSONValue = {"value": as_json, "at": datetime.now(UTC).isoformat(), "by": "viewer"}
    marked = replace(pending, metadata={**pending.metadata, DECISION_KEY: entry})
    calls = tuple(marked if p.id == call_id else p for p in turn.suspension.pending_tool_calls)
    updated = replace(turn, suspension=replace(turn.suspension, pending_tool_calls=calls))
    await store.checkpoint(session_id, updated, expected_revision=snap.revision)
    return True


def recorded_decisions(turn: Turn | None) -> dict[str, Decision]:
    """The decisions recorded for a suspended turn's pending calls, as ``tool_results``.

    Args:
        turn: the suspended turn (None gives no decisions).
    """
    if turn is None or turn.suspension is None:
        return {}
    out: dict[str, Decision] = {}
    for p in turn.suspension.pending_tool_calls:
        entry = p.metadata.get(DECISION_KEY)
        if isinstance(entry, dict) and "value" in entry:
            out[p.id] = _decision(entry["value"])
    return out


async def apply_recorded_decisions(agent: Agent[Any, Any]) -> RunResult[Any] | None:
    """Resume the agent's session with the decisions recorded in the viewer, if any.

    The owning process calls this (at start-up, or when told the session changed); it
    returns None when nothing was recorded.

    Args:
        agent: an agent bound to the session (``Agent(session=store.session(id))``).
    """
    session = agent.session
    if session is None:
        raise NoSuspendedTurnError("apply_recorded_decisions needs an agent with a session")
    snap = await session.load()
    decisions = recorded_decisions(snap.open_turn)
    if not decisions:
        return None
    assert snap.open_turn is not None
    return await agent.run(tool_results=decisions, turn_id=snap.open_turn.id)


def merge_recorded(turn: Turn | None, call_id: str, value: Decision) -> Mapping[str, Decision]:
    """``value`` for ``call_id`` plus the decisions recorded earlier for the turn's other calls."""
    out = {k: v for k, v in recorded_decisions(turn).items() if k != call_id}
    out[call_id] = value
    return out
