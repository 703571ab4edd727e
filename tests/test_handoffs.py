"""Handoffs: the conversation passes to another agent, with a session and without."""

from __future__ import annotations

import pytest

from dive.agent import Agent
from dive.errors import UserError
from dive.messages import Message
from dive.sessions import MemorySessionStore
from dive.subagents import handoff, run_with_handoffs
from dive.testing import ScriptedModel, call, text, tool_use


def agents() -> tuple[Agent, Agent, ScriptedModel, ScriptedModel]:
    billing_model = ScriptedModel([text("Your refund is on its way.")])
    billing = Agent(
        model=billing_model,
        name="billing",
        description="Handles refunds and invoices.",
        instructions="You are the billing agent.",
    )
    triage_model = ScriptedModel([tool_use(call("transfer_to_billing", {}, id="h1"))])
    triage = Agent(model=triage_model, name="triage", tools=[handoff(billing)])
    return triage, billing, triage_model, billing_model


async def test_a_handoff_on_a_session_lets_the_target_answer() -> None:
    triage, billing, triage_model, billing_model = agents()
    store = MemorySessionStore()
    session = store.session("s")
    done = await run_with_handoffs(triage, "I want a refund", session=session)
    assert done.last_agent is billing
    assert done.path == ("triage", "billing")
    assert done.result.output_text == "Your refund is on its way."
    (tool_def,) = triage_model.requests[0].tools
    assert tool_def.name == "transfer_to_billing"
    assert "Handles refunds" in tool_def.description
    request = billing_model.requests[0]
    assert request.system.startswith("You are the billing agent.")
    sent = [m.text for m in request.messages]
    assert sent[0] == "I want a refund"  # the whole conversation, with the target's prompt
    assert any("handed off to you by triage" in t for t in sent)
    turns = await session.turns()
    assert [t.status for t in turns] == ["completed", "completed"]
    assert turns[1].origin.kind == "continue"


async def test_a_stateless_handoff_sends_the_shared_view_through_the_filter() -> None:
    billing_model = ScriptedModel([text("done")])
    billing = Agent(model=billing_model, name="billing")
    seen: list[int] = []

    def only_recent(messages: list[Message]) -> list[Message]:
        seen.append(len(messages))
        return messages

    triage_model = ScriptedModel([tool_use(call("transfer_to_billing", {}, id="h1"))])
    triage = Agent(
        model=triage_model, name="triage", tools=[handoff(billing, input_filter=only_recent)]
    )
    secret = Message.user("internal note", visibility="private")
    done = await run_with_handoffs(triage, "hi", session=None, history=[secret])
    assert done.result.output_text == "done"
    assert seen == [3]  # the private note is not carried across: user, call, result
    assert not any(m.text == "internal note" for m in billing_model.requests[0].messages)


async def test_no_handoff_returns_the_first_answer() -> None:
    _, billing, _, _ = agents()
    model = ScriptedModel([text("I can answer that myself.")])
    triage = Agent(model=model, name="triage", tools=[handoff(billing)])
    done = await run_with_handoffs(triage, "hello", session=None)
    assert done.last_agent is triage
    assert done.path == ("triage",)


async def test_an_input_filter_needs_a_stateless_run() -> None:
    billing = Agent(model=ScriptedModel([text("x")]), name="billing")
    triage = Agent(
        model=ScriptedModel([tool_use(call("transfer_to_billing", {}, id="h1"))]),
        tools=[handoff(billing, input_filter=lambda m: m)],
    )
    with pytest.raises(UserError, match="stateless"):
        await run_with_handoffs(triage, "hi", session=MemorySessionStore().session("s"))
