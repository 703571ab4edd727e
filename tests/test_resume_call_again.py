"""``Suspend(call_again=True)``: resuming calls the tool again with the answer.

A tool whose answer must reach something else (an MCP server re-sent the call with the
user's reply) suspends with ``call_again=True``; the value supplied on resume is then not the
call's result but ``ctx.resumed.answer`` of a second call with the same input, whose output
is the result (and which may suspend again).
"""

from __future__ import annotations

from typing import Any

import pytest

from dive.agent import Agent, AgentEvent, Hooks, ToolCallResultEvent
from dive.errors import ConflictingToolResultError
from dive.messages import ToolResult
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import Suspend, ToolContext, ToolReturn, tool


class Asker:
    """A tool that asks until it has an answer for each of ``questions``."""

    def __init__(self, questions: list[str]) -> None:
        self.calls: list[tuple[dict[str, Any], Any]] = []
        calls = self.calls

        @tool
        async def book(ctx: ToolContext, day: str) -> Any:
            """Book a table, asking what it needs to know."""
            seen = ctx.resumed
            earlier: Any = seen.metadata.get("answers", []) if seen else []
            answers: list[Any] = list(earlier)
            if seen is not None:
                answers.append(seen.answer)
            calls.append(({"day": day}, None if seen is None else seen.answer))
            if len(answers) < len(questions):
                return Suspend(
                    questions[len(answers)],
                    metadata={"answers": answers, "schema": {"type": "object"}},
                    call_again=True,
                )
            return f"booked {day} with {answers}"

        @tool
        async def note(text: str) -> Suspend:
            """Wait for a note to be filled in."""
            return Suspend(f"fill in {text}")

        self.book = book
        self.note = note


def _results(messages: Any) -> dict[str, ToolResult]:
    return {r.tool_call_id: r for m in messages if (r := m.tool_result) is not None}


async def test_the_answer_is_given_to_a_second_call_whose_output_is_the_result() -> None:
    asker = Asker(["How many people?"])
    store = MemorySessionStore()
    seen: list[str] = []
    hooks = Hooks(
        pre_tool_use=[lambda ctx: seen.append("pre")],
        post_tool_use=[
            lambda ctx: seen.append(f"post:{ctx.tool_result.text if ctx.tool_result else ''}")
        ],
    )
    model = ScriptedModel([tool_use(call("book", {"day": "fri"}, id="c1")), text("done")])
    agent = Agent(model=model, tools=[asker.book], session=store.session("s"), hooks=hooks)
    first = await agent.run("book")
    assert first.status == "suspended"
    [pending] = first.turn.suspension.pending_tool_calls  # type: ignore[union-attr]
    assert pending.call_again is True
    assert pending.prompt == "How many people?"
    assert asker.calls == [({"day": "fri"}, None)]

    events: list[AgentEvent] = []
    second = await agent.run(tool_results={"c1": {"people": 4}}, on_event=events.append)
    assert second.status == "completed", second.error
    # called again with the same input and the answer; its output is the call's result
    assert asker.calls[1] == ({"day": "fri"}, {"people": 4})
    result = _results(second.turn.messages)["c1"]
    assert result.text == "booked fri with [{'people': 4}]"
    assert not result.is_error
    # pre_tool_use fired once (the first call), post_tool_use once with the final result
    assert seen == ["pre", "post:booked fri with [{'people': 4}]"]
    [event] = [e for e in events if isinstance(e, ToolCallResultEvent)]
    assert event.state == "completed"
    assert event.result == result
    assert {r.id: r.state for r in second.turn.tool_calls} == {"c1": "completed"}
    # the model saw the real result, not the answer
    sent = _results(model.requests[1].messages)
    assert sent["c1"].text == "booked fri with [{'people': 4}]"


async def test_a_call_that_asks_again_suspends_again_and_takes_a_new_answer() -> None:
    asker = Asker(["How many people?", "Which time?"])
    store = MemorySessionStore()
    model = ScriptedModel([tool_use(call("book", {"day": "fri"}, id="c1")), text("done")])
    agent = Agent(model=model, tools=[asker.book], session=store.session("s"))
    await agent.run("book")

    again = await agent.run(tool_results={"c1": {"people": 4}})
    assert again.status == "suspended"
    [pending] = again.turn.suspension.pending_tool_calls  # type: ignore[union-attr]
    assert pending.prompt == "Which time?"
    assert list(dict(pending.metadata)["answers"]) == [{"people": 4}]  # pyright: ignore[reportArgumentType]
    assert len(model.requests) == 1  # no model call in between

    # a different answer is a new answer, not a conflicting re-submission
    done = await agent.run(tool_results={"c1": {"time": "8pm"}})
    assert done.status == "completed", done.error
    assert _results(done.turn.messages)["c1"].text == (
        "booked fri with [{'people': 4}, {'time': '8pm'}]"
    )
    assert [a for _, a in asker.calls] == [None, {"people": 4}, {"time": "8pm"}]


async def test_an_answer_given_in_a_partial_resume_is_delivered_once_nothing_is_pending() -> None:
    asker = Asker(["How many people?"])
    store = MemorySessionStore()
    model = ScriptedModel(
        [
            tool_use(
                call("book", {"day": "fri"}, id="c1"), call("note", {"text": "name"}, id="c2")
            ),
            text("done"),
        ]
    )
    agent = Agent(model=model, tools=[asker.book, asker.note], session=store.session("s"))
    first = await agent.run("book")
    assert first.status == "suspended"

    partial = await agent.run(tool_results={"c1": {"people": 2}})
    assert partial.status == "suspended"
    assert len(asker.calls) == 1  # held until the last answer
    # the same answer again is an idempotent re-submission; a different one conflicts
    again = await agent.run(tool_results={"c1": {"people": 2}, "c2": "Ada"})
    assert again.status == "completed", again.error
    assert [a for _, a in asker.calls] == [None, {"people": 2}]
    results = _results(again.turn.messages)
    assert results["c1"].text == "booked fri with [{'people': 2}]"
    assert results["c2"].text == "Ada"


async def test_a_different_answer_after_a_partial_resume_conflicts() -> None:
    asker = Asker(["How many people?"])
    store = MemorySessionStore()
    model = ScriptedModel(
        [
            tool_use(
                call("book", {"day": "fri"}, id="c1"), call("note", {"text": "name"}, id="c2")
            ),
            text("done"),
        ]
    )
    agent = Agent(model=model, tools=[asker.book, asker.note], session=store.session("s"))
    await agent.run("book")
    await agent.run(tool_results={"c1": {"people": 2}})
    with pytest.raises(ConflictingToolResultError):
        await agent.run(tool_results={"c1": {"people": 3}})


async def test_stateless_resume_calls_the_tool_again() -> None:
    asker = Asker(["How many people?"])
    model = ScriptedModel([tool_use(call("book", {"day": "sat"}, id="c1")), text("done")])
    agent = Agent(model=model, tools=[asker.book])
    first = await agent.run("book")
    assert first.turn.suspension is not None
    done = await agent.run(
        history=[],
        suspension=first.turn.suspension,
        tool_results={"c1": {"people": 1}},
    )
    assert done.status == "completed", done.error
    assert _results(done.turn.messages)["c1"].text == "booked sat with [{'people': 1}]"


async def test_a_call_whose_tool_is_gone_on_resume_gets_an_error_result() -> None:
    asker = Asker(["How many people?"])
    store = MemorySessionStore()
    model = ScriptedModel([tool_use(call("book", {"day": "fri"}, id="c1")), text("done")])
    await Agent(model=model, tools=[asker.book], session=store.session("s")).run("book")
    other = Agent(model=model, tools=[asker.note], session=store.session("s"))
    done = await other.run(tool_results={"c1": {"people": 4}})
    assert done.status == "completed", done.error
    result = _results(done.turn.messages)["c1"]
    assert result.is_error
    assert "no longer available" in result.text


# --- ToolReturn(structured=...): content and a structured value side by side ------------------


async def test_a_tool_return_keeps_its_structured_value_beside_the_content() -> None:
    @tool
    async def weather(city: str) -> ToolReturn:
        """The weather."""
        return ToolReturn(content=f"{city}: 21.5 C", structured={"city": city, "celsius": 21.5})

    model = ScriptedModel([tool_use(call("weather", {"city": "Oslo"}, id="w")), text("ok")])
    run = await Agent(model=model, tools=[weather]).run("weather?")
    result = _results(run.turn.messages)["w"]
    assert result.text == "Oslo: 21.5 C"
    assert result.structured == {"city": "Oslo", "celsius": 21.5}
