"""Validating a resume before the turn boundary: what was supplied, and what remains.

An id not in the turn raises ``UnknownToolCallError``; an id whose call is not pending
raises ``ToolCallNotPendingError`` — unless its result was already accepted and is
JSON-equal (skipped: idempotent re-submission) or differs (``ConflictingToolResultError``).
Nothing changes on error.

A value supplied for a call that suspended with ``Suspend(call_again=True)`` is not its result
but an *answer*: the tool is called again with it once nothing else is pending.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from dive.agent._approval import DENIED_TEXT, ToolApproval
from dive.agent._outputs import to_tool_result
from dive.errors import (
    ConflictingToolResultError,
    InvalidRunError,
    ToolCallNotPendingError,
    UnknownToolCallError,
)
from dive.messages import JSONValue, TextBlock, ToolCall, ToolResult
from dive.messages.codec import to_jsonable
from dive.tools import Background, Suspend
from dive.turns import PendingToolCall, SuspensionState
from dive.turns._engine import split_suspended

__all__ = ["ResumePlan", "plan_resume"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumePlan:
    """A validated resume of a suspended tool group.

    Attributes:
        calls: the group's calls, in call order.
        supplied: results supplied now, by call id.
        approved: ids of gate-held calls approved (they run once nothing remains), now or in
            an earlier partial resume (such calls stay held until then).
        accepted: every result accepted so far, as JSON (this resume's included).
        remaining: pending calls nothing was supplied for (a partial resume when non-empty).
        approvals: the ``ToolApproval`` settling each gate-held call answered now, by call id
            (the audit log and the approval policy learn from them).
        answers: answers to calls whose tool is called again with them (``call_again``), now
            or in an earlier partial resume, as JSON by call id.
    """

    calls: tuple[ToolCall, ...]
    supplied: Mapping[str, ToolResult]
    approved: frozenset[str]
    accepted: Mapping[str, JSONValue]
    remaining: Mapping[str, PendingToolCall]
    approvals: Mapping[str, ToolApproval] = field(default_factory=dict[str, ToolApproval])
    answers: Mapping[str, JSONValue] = field(default_factory=dict[str, JSONValue])


def _as_json(value: Any) -> JSONValue:
    if isinstance(value, ToolApproval):
        return {"approved": value.approved, "message": value.message}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    try:
        return json.loads(json.dumps(to_jsonable(value)))
    except (TypeError, ValueError) as exc:
        raise InvalidRunError(f"tool result {value!r} is not JSON-serializable: {exc}") from None


def _convert(call: ToolCall, pending: PendingToolCall, value: Any) -> ToolResult | None:
    """The result a supplied value becomes; None for an approval of a gate-held call."""
    if not isinstance(value, ToolApproval):
        return to_tool_result(call, value)
    if not pending.started:  # held at the gate
        if value.approved:
            return None
        text = value.message or DENIED_TEXT
        return ToolResult(
            tool_call_id=call.id, name=call.name, content=(TextBlock(text=text),), is_error=True
        )
    payload: dict[str, JSONValue] = {"approved": value.approved, "message": value.message}
    return ToolResult(
        tool_call_id=call.id,
        name=call.name,
        content=(TextBlock(text=json.dumps(payload)),),
        structured=payload,
        is_error=not value.approved,
    )


def plan_resume(state: SuspensionState, tool_results: Mapping[str, Any]) -> ResumePlan:
    """Validate ``tool_results`` against the suspension; raise before anything changes."""
    if not tool_results:
        raise InvalidRunError("tool_results is empty: pass at least one {call_id: result}")
    _, calls, _ = split_suspended(state.turn_messages)
    by_id = {c.id: c for c in calls}
    pending = {p.id: p for p in state.pending_tool_calls}
    accepted = dict(state.accepted)
    supplied: dict[str, ToolResult] = {}
    approved: set[str] = set()
    approvals: dict[str, ToolApproval] = {}
    for call_id, value in tool_results.items():
        if isinstance(value, Suspend | Background):
            raise InvalidRunError(
                f"tool_results[{call_id!r}] is a {type(value).__name__}; supply a result or a "
                "ToolApproval"
            )
        if call_id not in by_id:
            raise UnknownToolCallError(
                f"tool call {call_id!r} is not part of suspended turn {state.turn_id}; its "
                f"calls are {', '.join(sorted(by_id))}"
            )
        as_json = _as_json(value)
        if call_id in accepted:
            if accepted[call_id] == as_json:
                continue  # an identical re-submission: already accepted
            raise ConflictingToolResultError(
                f"a different result for tool call {call_id!r} was already accepted"
            )
        if call_id not in pending:
            raise ToolCallNotPendingError(
                f"tool call {call_id!r} is not waiting for a result (pending: "
                f"{', '.join(sorted(pending)) or 'none'})"
            )
        accepted[call_id] = as_json
        if pending[call_id].call_again:
            continue  # an answer the tool is called again with (collected below)
        if isinstance(value, ToolApproval) and not pending[call_id].started:
            approvals[call_id] = value
        result = _convert(by_id[call_id], pending[call_id], value)
        if result is None:
            approved.add(call_id)
        else:
            supplied[call_id] = result
    answers: dict[str, JSONValue] = {}
    for call_id, p in pending.items():  # answered or approved now or in an earlier resume
        earlier = accepted.get(call_id)
        if p.call_again and call_id in accepted:
            answers[call_id] = earlier
        elif not p.started and isinstance(earlier, dict) and earlier.get("approved") is True:
            approved.add(call_id)
    remaining = {
        k: v
        for k, v in pending.items()
        if k not in supplied and k not in approved and k not in answers
    }
    return ResumePlan(
        calls=calls,
        supplied=supplied,
        approved=frozenset(approved),
        accepted=accepted,
        remaining=remaining,
        approvals=approvals,
        answers=answers,
    )
