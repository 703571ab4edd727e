"""A stored turn as a regression test: a ``ScriptedModel`` script plus the expected record.

``regression_test(turn, earlier=...)`` writes a self-contained pytest file. The earlier turns
are imported into a ``MemorySessionStore`` (so the run starts from the same history), the
model answers with the responses the turn recorded, and every tool answers with the result
the turn recorded: it suspends where the turn is still waiting, is held at the approval gate
where the audit log says it was asked (and approved or denied on resume, as recorded), and
times out where the record says it timed out. The test then checks the turn ends as
recorded: status, outcome reason, messages (timestamps aside), each call's state and the
calls still pending.

A turn can be exported when the replay can reproduce how it ended: completed, suspended,
or incomplete with ``provider_error`` (the script ends with the provider's error). Other
endings raise ``UserError`` naming them.
"""

from __future__ import annotations

import pprint
from collections.abc import Sequence
from typing import Any

from dive.errors import UserError
from dive.turns import Turn

__all__ = ["EXPORTABLE_REASONS", "check_exportable", "regression_test", "export_file_name"]

EXPORTABLE_REASONS = frozenset({"provider_error"})

_TEMPLATE = '''\
"""Regression test for turn {turn_id} of session {session_id}, exported by the dive viewer.

The model replays the responses the turn recorded (a ScriptedModel script); each tool
answers with the result the turn recorded. The test checks the turn ends as recorded.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from dive import Agent
from dive.agent import ApprovalDecision, ToolApproval, allow, ask, deny
from dive.errors import ProviderError
from dive.llm import ModelResponse
from dive.messages import Message, ToolCall, ToolDefinition
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, Step
from dive.tools import Suspend, Tool, ToolContext, ToolReturn
from dive.turns import Turn, is_reminder

EARLIER: list[dict[str, Any]] = {earlier}

EXPECTED: dict[str, Any] = {expected}


def script(turn: Turn) -> list[Any]:
    """The recorded model responses, and the provider error the turn ended with."""
    items: list[Any] = [
        ModelResponse(content=m.content, stop_reason="tool_use" if m.tool_calls else "end_turn")
        for m in turn.messages
        if m.role == "assistant"
    ]
    if turn.outcome is not None and turn.outcome.reason == "provider_error":
        items.append(Step(raise_before=ProviderError(turn.outcome.error or "provider error")))
    return items


class Recorded(Tool):
    """A tool answering each call with what the turn recorded for it."""

    def __init__(self, name: str, turn: Turn) -> None:
        records = [c for c in turn.tool_calls if c.name == name]
        timeout = None
        for c in records:
            found = re.search(r"timed out after ([0-9.]+) s", c.error or "")
            if c.state == "unknown" and found:
                timeout = float(found.group(1))
        effect = next((c.effect for c in records if c.effect), None)
        self.definition = ToolDefinition(
            name=name, effect_type=effect, timeout=timeout
        )
        self.results = {{
            r.tool_call_id: r
            for m in turn.messages
            for r in [m.tool_result]
            if m.role == "tool" and r is not None
        }}
        self.states = {{c.id: c.state for c in records}}
        suspension = turn.suspension
        self.pending = {{
            p.id: p for p in (suspension.pending_tool_calls if suspension else ()) if p.started
        }}

    async def call(self, input: Any, ctx: ToolContext) -> Any:
        pending = self.pending.get(ctx.tool_call_id)
        if pending is not None:
            return Suspend(
                pending.prompt,
                reason=pending.reason,
                metadata=dict(pending.metadata),
                call_again=pending.call_again,
            )
        if self.states.get(ctx.tool_call_id) == "unknown":
            await asyncio.Event().wait()  # recorded as timed out: time out again
        result = self.results[ctx.tool_call_id]
        return ToolReturn(
            content=list(result.content) or "",
            is_error=result.is_error,
            structured=result.structured,
        )


def policy(turn: Turn) -> Any:
    """The approval gate's recorded decisions (the first of each call's audit log)."""
    first = {{c.id: c.approvals[0] for c in turn.tool_calls if c.approvals}}

    def decide(tool: Tool, call: ToolCall) -> ApprovalDecision:
        record = first.get(call.id)
        if record is None or record.decision == "allow":
            return allow()
        return deny(record.message) if record.decision == "deny" else ask(record.message)

    return decide


def answers(turn: Turn) -> dict[str, ToolApproval]:
    """How the resume settled each held call, from the audit log."""
    out: dict[str, ToolApproval] = {{}}
    for c in turn.tool_calls:
        for a in c.approvals:
            if a.decided_by == "resume":
                out[c.id] = ToolApproval(approved=a.decision == "allow", message=a.message)
    return out


def shape(turn: Turn) -> dict[str, Any]:
    """What must match: status, reason, messages (timestamps aside), call states, pending."""

    def plain(m: Message) -> dict[str, Any]:
        data = m.to_dict()
        data.pop("created_at", None)
        return data

    suspension = turn.suspension
    return {{
        "status": turn.status,
        "reason": turn.outcome.reason if turn.outcome else None,
        "messages": [plain(m) for m in turn.messages],
        "calls": [(c.id, c.name, c.state) for c in turn.tool_calls],
        "pending": [p.id for p in (suspension.pending_tool_calls if suspension else ())],
    }}


async def replay() -> Turn:
    expected = Turn.from_json(EXPECTED)
    store = MemorySessionStore()
    revision = 0
    for data in EARLIER:
        turn = Turn.from_json(data)
        revision = await store.checkpoint("replay", turn, expected_revision=revision)
    agent = Agent(
        model=ScriptedModel(script(expected)),
        tools=[Recorded(n, expected) for n in sorted({{c.name for c in expected.tool_calls}})],
        approval_policy=policy(expected),
        session=store.session("replay"),
    )
    inputs: list[Message] = []
    for m in expected.messages:
        if m.role == "assistant":
            break
        if not is_reminder(m):  # the turn's own notes come back on their own
            inputs.append(m)
    result = await (agent.run(inputs) if inputs else agent.run(continue_turn=True))
    settled = answers(expected)
    while result.turn.status == "suspended" and result.turn.suspension is not None:
        pending = result.turn.suspension.pending_tool_calls
        ready = {{p.id: settled[p.id] for p in pending if p.id in settled}}
        if not ready:
            break
        result = await agent.run(tool_results=ready)
    return result.turn


def test_turn_replays_as_recorded() -> None:
    assert shape(asyncio.run(replay())) == shape(Turn.from_json(EXPECTED))
'''


def check_exportable(turn: Turn) -> None:
    """Raise ``UserError`` when a replay cannot reproduce how ``turn`` ended."""
    if turn.status == "running":
        raise UserError(f"turn {turn.id} is still running; export it once it has ended")
    if turn.origin.kind == "background":
        raise UserError(
            f"turn {turn.id} delivered background results, which a replay cannot supply; "
            "export a turn started by input"
        )
    reason = turn.outcome.reason if turn.outcome is not None else None
    if turn.status == "incomplete" and reason not in EXPORTABLE_REASONS:
        raise UserError(
            f"turn {turn.id} ended incomplete ({reason}), which a replay cannot reproduce "
            "offline; completed, suspended and provider_error turns can be exported"
        )


def export_file_name(session_id: str, turn: Turn) -> str:
    """``test_<session>_<turn>.py`` with only characters a module name may hold."""
    safe = "".join(ch if ch.isalnum() else "_" for ch in session_id)
    return f"test_{safe}_{turn.id.removeprefix('turn_')[:12]}.py"


def _literal(value: Any) -> str:
    return pprint.pformat(value, width=96, sort_dicts=False)


def regression_test(turn: Turn, *, session_id: str, earlier: Sequence[Turn] = ()) -> str:
    """The pytest file replaying ``turn`` (see the module docstring).

    Args:
        turn: the turn to replay.
        session_id: its session (named in the file's docstring).
        earlier: the session's turns before it (the history the run starts from).

    Raises:
        UserError: the turn ended in a way a replay cannot reproduce.
    """
    check_exportable(turn)
    return _TEMPLATE.format(
        turn_id=turn.id,
        session_id=session_id,
        earlier=_literal([t.to_dict() for t in earlier]),
        expected=_literal(turn.to_dict()),
    )
