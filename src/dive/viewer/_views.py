"""What the pages show, projected from the stored records (no web framework here).

A turn record holds its messages with their timestamps (user and assistant messages carry
``created_at``), every call's recorded state, the approvals audit log, turn-wide usage and the
outcome. ``turn_view`` folds them into steps: the turn's input, then one ``ModelCallView`` per
assistant message with its text, collapsed thinking and tool calls (each with its recorded
state, arguments, result, approvals and, for a suspended turn, its pending wait). The record
times each model response, not each tool call: a model call after a tool batch is timed
together with that batch (``after_tools``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from dive.llm import Usage
from dive.messages import Message, RedactedThinkingBlock, ThinkingBlock, ToolResult
from dive.turns import (
    ApprovalRecord,
    PendingToolCall,
    ToolCallRecord,
    Turn,
    is_reminder,
    outcome_note,
    reminder_details,
)
from dive.viewer._costs import ideal_cost
from dive.viewer._trace import Bar

__all__ = [
    "CallView",
    "ModelCallView",
    "TurnPage",
    "reconcile_advice",
    "turn_view",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallView:
    """One tool call as the session page shows it."""

    id: str
    name: str
    state: str
    arguments: str
    result: str | None
    is_error: bool
    record: ToolCallRecord | None
    approvals: tuple[ApprovalRecord, ...]
    pending: PendingToolCall | None
    advice: str | None
    subagent_session: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallView:
    """One model response of a turn and the calls it made."""

    index: int
    at: datetime | None
    seconds: float | None
    after_tools: bool
    text: str
    thinking: tuple[str, ...]
    calls: tuple[CallView, ...]
    span: Bar | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnPage:
    """A turn on the session page: status, reason, next step, steps, usage and cost."""

    index: int
    record: Turn
    status: str
    reason: str | None
    next: str | None
    error: str | None
    note: str | None
    inputs: tuple[str, ...]
    notes: tuple[str, ...]
    model_calls: tuple[ModelCallView, ...]
    seconds: float | None
    usage: Usage
    ideal: float | None
    pending: tuple[CallView, ...]
    unknown: tuple[CallView, ...]
    parent_turn: str | None


def _seconds(a: datetime | None, b: datetime | None) -> float | None:
    if a is None or b is None:
        return None
    return max(0.0, (b - a).total_seconds())


def _json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def reconcile_advice(turn_id: str, record: ToolCallRecord) -> str | None:
    """What to check before repeating a call recorded ``unknown``, or None for other states."""
    if record.state != "unknown":
        return None
    key = f"(turn {turn_id}, call {record.id})"
    if not record.reconcile or record.effect == "read_only":
        return f"{record.name} is read-only: repeating it is safe."
    if record.effect == "external_side_effect":
        what = "reached another system (a message sent, a payment made)"
    else:
        what = "written something"
    return (
        f"{record.name} may have {what} before its result was lost. Check its target "
        f"before repeating it; a tool that honours the idempotency key {key} can be called "
        "again safely."
    )


def _results(messages: Sequence[Message]) -> dict[str, ToolResult]:
    out: dict[str, ToolResult] = {}
    for m in messages:
        r = m.tool_result
        if m.role == "tool" and r is not None:
            out.setdefault(r.tool_call_id, r)
    return out


def _call_views(
    turn: Turn,
    message: Message,
    results: Mapping[str, ToolResult],
    subagents: frozenset[str],
) -> tuple[CallView, ...]:
    records = {c.id: c for c in turn.tool_calls}
    pending = {p.id: p for p in (turn.suspension.pending_tool_calls if turn.suspension else ())}
    out: list[CallView] = []
    for call in message.tool_calls:
        record = records.get(call.id)
        result = results.get(call.id)
        sub = f"{turn.id}.{call.id}"
        out.append(
            CallView(
                id=call.id,
                name=call.name,
                state=record.state if record is not None else "completed",
                arguments=_json(dict(call.arguments)),
                result=result.text if result is not None else None,
                is_error=result.is_error if result is not None else False,
                record=record,
                approvals=record.approvals if record is not None else (),
                pending=pending.get(call.id),
                advice=reconcile_advice(turn.id, record) if record is not None else None,
                subagent_session=sub if sub in subagents else None,
            )
        )
    return tuple(out)


def _model_calls(turn: Turn, subagents: frozenset[str]) -> tuple[ModelCallView, ...]:
    results = _results(turn.messages)
    out: list[ModelCallView] = []
    previous = turn.created_at
    after_tools = False
    for m in turn.messages:
        if m.role == "tool":
            after_tools = True
            continue
        if m.role != "assistant":
            if m.created_at is not None and not out:
                previous = m.created_at
            continue
        thinking = tuple(
            b.thinking if isinstance(b, ThinkingBlock) else "(redacted thinking)"
            for b in m.content
            if isinstance(b, ThinkingBlock | RedactedThinkingBlock)
        )
        out.append(
            ModelCallView(
                index=len(out) + 1,
                at=m.created_at,
                seconds=_seconds(previous, m.created_at),
                after_tools=after_tools,
                text=m.text,
                thinking=thinking,
                calls=_call_views(turn, m, results, subagents),
            )
        )
        previous = m.created_at or previous
        after_tools = False
    return tuple(out)


def _inputs_and_notes(turn: Turn) -> tuple[tuple[str, ...], tuple[str, ...]]:
    inputs: list[str] = []
    notes: list[str] = []
    for m in turn.messages:
        if m.role == "assistant":
            if not inputs and not notes:
                continue
            break
        if m.role != "user":
            continue
        if is_reminder(m):
            details = reminder_details(m)
            name = m.metadata.get("dive.reminder", "reminder")
            notes.append(f"{name}: {_json(dict(details)) if details else m.text}")
        else:
            inputs.append(m.text)
    return tuple(inputs), tuple(notes)


def _with_spans(
    calls: tuple[ModelCallView, ...], spans: Sequence[Bar]
) -> tuple[ModelCallView, ...]:
    """Each model call with its ``chat`` span (tokens, cost), matched in order, when exported."""
    chats = [b for b in spans if b.kind == "chat"]
    if len(chats) != len(calls):
        return calls  # spans of another shape (a missing export): better none than wrong ones
    return tuple(replace(c, span=s) for c, s in zip(calls, chats, strict=True))


def turn_view(
    turn: Turn,
    index: int,
    *,
    subagents: frozenset[str] = frozenset(),
    model: str | None = None,
    spans: Sequence[Bar] = (),
) -> TurnPage:
    """The session page's view of ``turn`` (the ``index``-th of its session, from 1).

    Args:
        turn: the record.
        index: its position in the session.
        subagents: ids of stored sessions (a subagent's session is ``<turn id>.<call id>``).
        model: ``provider:model`` to price the ideal-caching comparison, if known.
        spans: the turn's exported spans (``span_bars``): per model call tokens and cost.
    """
    calls = _with_spans(_model_calls(turn, subagents), spans)
    flat = [c for mc in calls for c in mc.calls]
    outcome = turn.outcome
    inputs, notes = _inputs_and_notes(turn)
    return TurnPage(
        index=index,
        record=turn,
        status=turn.status,
        reason=outcome.reason if outcome is not None else None,
        next=outcome.next if outcome is not None else ("resume" if turn.suspension else None),
        error=outcome.error if outcome is not None else None,
        note=outcome_note(outcome).content if outcome is not None else None,
        inputs=inputs,
        notes=notes,
        model_calls=calls,
        seconds=_seconds(turn.created_at, turn.finished_at),
        usage=turn.usage,
        ideal=ideal_cost(turn.usage, model) if model else None,
        pending=tuple(c for c in flat if c.pending is not None),
        unknown=tuple(c for c in flat if c.state == "unknown"),
        parent_turn=turn.origin.parent_turn_id,
    )
