"""``agui_app`` over HTTP on 127.0.0.1: every event validates against AG-UI's own models."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from ag_ui.core import Event, EventType
from pydantic import TypeAdapter

from dive.agent import Agent
from dive.agui import APPROVAL_SCHEMA, agui_app
from dive.sessions import MemorySessionStore, SessionStore
from dive.testing import ScriptedModel, Step, call, text, tool_use
from dive.tools import Suspend, ToolContext, tool
from tests._serve import serve

EVENT: TypeAdapter[Any] = TypeAdapter(Event)


async def run(url: str, body: dict[str, Any]) -> list[Any]:
    """POST a RunAgentInput; every SSE event parsed and validated as an AG-UI event."""
    events: list[Any] = []
    async with (
        httpx.AsyncClient(timeout=30) as http,
        http.stream("POST", url, json=body, headers={"accept": "text/event-stream"}) as reply,
    ):
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        async for line in reply.aiter_lines():
            if line.startswith("data: "):
                events.append(EVENT.validate_python(json.loads(line.removeprefix("data: "))))
    return events


def types(events: list[Any]) -> list[str]:
    return [e.type.value for e in events]


def user(text: str, id: str = "u1") -> dict[str, Any]:
    return {"id": id, "role": "user", "content": text}


@tool
def add_item(ctx: ToolContext, item: str) -> str:
    """Add an item to the shopping list."""
    ctx.values["state"]["items"].append(item)
    return f"added {item}"


@tool(requires_approval=True)
def pay(amount: int) -> str:
    """Pay the bill."""
    return f"paid {amount}"


@tool
def ask_size() -> Suspend:
    """Ask the shopper for the size."""
    return Suspend(
        "Which size?",
        metadata={"response_schema": {"type": "string", "enum": ["S", "M", "L"]}},
    )


async def test_text_tool_calls_and_state_snapshots() -> None:
    model = ScriptedModel([tool_use(call("add_item", {"item": "milk"})), text("Milk is on it.")])
    agent = Agent(model=model, tools=[add_item])
    async with serve(agui_app(agent, store=MemorySessionStore())) as url:
        events = await run(
            url,
            {
                "threadId": "t1",
                "runId": "r1",
                "messages": [user("Add milk.")],
                "state": {"items": ["eggs"]},
            },
        )
    assert types(events) == [
        "RUN_STARTED",
        "STATE_SNAPSHOT",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "STATE_SNAPSHOT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert events[1].snapshot == {"items": ["eggs"]}
    assert json.loads(events[3].delta) == {"item": "milk"}
    assert events[5].content == "added milk"
    assert events[6].snapshot == {"items": ["eggs", "milk"]}
    assert events[8].delta == "Milk is on it."
    assert events[-1].result == "Milk is on it."
    assert events[-1].outcome.type == "success"
    assert {e.message_id for e in events[7:10]} == {events[7].message_id}


async def test_a_non_streaming_model_still_sends_whole_text_messages() -> None:
    model = ScriptedModel([text("Hello.")], streaming=False)
    async with serve(agui_app(Agent(model=model))) as url:
        events = await run(url, {"threadId": "t", "runId": "r", "messages": [user("Hi")]})
    assert types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]


@pytest.mark.parametrize("stored", [True, False])
async def test_an_approval_interrupt_and_its_resume(stored: bool) -> None:
    model = ScriptedModel([tool_use(call("pay", {"amount": 30})), text("Paid.")])
    store: SessionStore | None = MemorySessionStore() if stored else None
    async with serve(agui_app(Agent(model=model, tools=[pay]), store=store)) as url:
        first = await run(url, {"threadId": "bill", "runId": "r1", "messages": [user("Pay.")]})
        finished = first[-1]
        assert finished.type == EventType.RUN_FINISHED
        assert finished.outcome.type == "interrupt"
        [interrupt] = finished.outcome.interrupts
        assert interrupt.reason == "approval_required"
        assert interrupt.response_schema == APPROVAL_SCHEMA
        assert interrupt.tool_call_id == interrupt.id
        assert "TOOL_CALL_RESULT" not in types(first)  # held at the gate, not run
        second = await run(
            url,
            {
                "threadId": "bill",
                "runId": "r2",
                "messages": [user("Pay.")],
                "resume": [
                    {
                        "interruptId": interrupt.id,
                        "status": "resolved",
                        "payload": {"approved": True},
                    }
                ],
            },
        )
    assert types(second)[:2] == ["RUN_STARTED", "TOOL_CALL_RESULT"]
    assert second[1].content == "paid 30"
    assert second[-1].outcome.type == "success"
    assert second[-1].result == "Paid."


async def test_an_input_interrupt_takes_the_payload_and_cancel_denies() -> None:
    model = ScriptedModel(
        [
            tool_use(call("ask_size")),
            text("Size M it is."),
            tool_use(call("pay", {"amount": 9})),
            text("Not paid."),
        ]
    )
    store = MemorySessionStore()
    agent = Agent(model=model, tools=[ask_size, pay])
    async with serve(agui_app(agent, store=store)) as url:
        asked = await run(url, {"threadId": "shop", "runId": "r1", "messages": [user("Shirt")]})
        [interrupt] = asked[-1].outcome.interrupts
        answered = await run(
            url,
            {
                "threadId": "shop",
                "runId": "r2",
                "messages": [],
                "resume": [{"interruptId": interrupt.id, "status": "resolved", "payload": "M"}],
            },
        )
        gated = await run(url, {"threadId": "shop", "runId": "r3", "messages": [user("Pay", "u2")]})
        [approval] = gated[-1].outcome.interrupts
        denied = await run(
            url,
            {
                "threadId": "shop",
                "runId": "r4",
                "messages": [],
                "resume": [{"interruptId": approval.id, "status": "cancelled"}],
            },
        )
    assert interrupt.message == "Which size?"
    assert interrupt.response_schema == {"type": "string", "enum": ["S", "M", "L"]}
    assert answered[1].content == "M"
    assert answered[-1].result == "Size M it is."
    assert "cancelled" in denied[1].content
    assert denied[-1].result == "Not paid."
    turns = await store.turns("shop")
    assert [t.status for t in turns] == ["completed", "completed"]


async def test_errors_are_run_error_events() -> None:
    cut = Step(response=text("partial"), cut_after=3, cut_error=ConnectionResetError("reset"))
    model = ScriptedModel([tool_use(call("pay", {"amount": 1})), cut])
    async with serve(agui_app(Agent(model=model, tools=[pay]), store=MemorySessionStore())) as url:
        waiting = await run(url, {"threadId": "e", "runId": "r1", "messages": [user("Pay")]})
        blocked = await run(url, {"threadId": "e", "runId": "r2", "messages": [user("Hi", "u2")]})
        [interrupt] = waiting[-1].outcome.interrupts
        broken = await run(
            url,
            {
                "threadId": "e",
                "runId": "r3",
                "messages": [],
                "resume": [{"interruptId": interrupt.id, "status": "resolved", "payload": True}],
            },
        )
        async with httpx.AsyncClient() as http:
            bad = await http.post(url, json={"threadId": "x"})
    assert types(blocked) == ["RUN_STARTED", "RUN_ERROR"]
    assert "resume entries" in blocked[-1].message
    assert broken[-1].type == EventType.RUN_ERROR
    assert broken[-1].code == "stream_interrupted"
    assert bad.status_code == 422
