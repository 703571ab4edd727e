"""A tool returning ``Background`` starts a task whose result reaches a later turn.

Before this was built, ``Background`` was exported but every such call was answered with an
error and nothing ever ran: these tests were written first and failed on that code.
"""

from __future__ import annotations

import asyncio

from dive.agent import Agent, BackgroundTaskHandle, HookContext, Hooks, await_background_tasks
from dive.messages import ToolResult
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import Background, Suspend, ToolContext, tool
from dive.turns import find_reminder


async def test_the_model_gets_a_started_result_and_the_task_outlives_the_turn() -> None:
    release = asyncio.Event()
    seen_call_ids: list[str] = []

    @tool
    async def research(topic: str, ctx: ToolContext) -> Background:
        """Research a topic in the background."""
        seen_call_ids.append(ctx.tool_call_id)

        async def work() -> str:
            await release.wait()
            return f"notes on {topic}"

        return Background(description=f"research {topic}", fn=work)

    store = MemorySessionStore()
    session = store.session("s")
    model = ScriptedModel(
        [tool_use(call("research", {"topic": "owls"}, id="c1")), text("started it")]
    )
    delivered: list[tuple[str, str]] = []

    async def on_delivery(ctx: HookContext) -> None:
        assert ctx.tool_result is not None
        delivered.append((ctx.tool_result.tool_call_id, ctx.tool_result.text))

    agent = Agent(
        model=model,
        tools=[research],
        session=session,
        hooks=Hooks(post_background_tool_use=[on_delivery]),
    )
    first = await agent.run("look into owls")
    assert first.status == "completed"
    result = first.tool_call_results()[0].result
    assert result is not None
    assert not result.is_error
    assert "task_c1" in result.text
    assert "research owls" in result.text
    (handle,) = first.background_tasks
    assert isinstance(handle, BackgroundTaskHandle)
    assert (handle.task_id, handle.tool_call_id, handle.turn_id) == (
        "task_c1",
        "c1",
        first.turn.id,
    )
    assert handle.description == "research owls"
    assert not handle.done.done()  # still running after its turn ended

    release.set()
    (late,) = await await_background_tasks([handle], wait_at_most=1.0)
    assert late.result.text == "notes on owls"
    assert not late.result.is_error

    model.add(text("the owls report is in"))
    second = await agent.run(background_results=[late])
    assert second.turn.origin.kind == "background"
    assert second.turn.origin.turn_id == first.turn.id
    reminder = find_reminder(second.turn.messages, "background-tasks")
    assert reminder is not None
    assert "notes on owls" in reminder.content
    assert "task_c1" in reminder.content
    assert delivered == [("c1", "notes on owls")]
    sent = model.requests[-1].messages
    assert any("notes on owls" in m.text for m in sent)


async def test_a_failing_or_suspending_background_task_is_an_error_result() -> None:
    @tool
    async def boom() -> Background:
        """Fails later."""

        async def work() -> str:
            raise RuntimeError("disk on fire")

        return Background(description="boom", fn=work)

    @tool
    async def asks() -> Background:
        """Asks later."""

        async def work() -> Suspend:
            return Suspend("which one?")

        return Background(description="asks", fn=work)

    model = ScriptedModel(
        [tool_use(call("boom", {}, id="b1"), call("asks", {}, id="a1")), text("ok")]
    )
    agent = Agent(model=model, tools=[boom, asks])
    run = await agent.run("go")
    found = await await_background_tasks(list(run.background_tasks), wait_at_most=1.0)
    by_id = {r.tool_call_id: r.result for r in found}
    assert by_id["b1"].is_error
    assert by_id["b1"].text == "Tool execution error: disk on fire"
    assert by_id["a1"].is_error
    assert "asked for input after its turn ended" in by_id["a1"].text


async def test_a_background_task_can_be_stopped_with_a_reason() -> None:
    @tool
    async def forever() -> Background:
        """Never finishes."""

        async def work() -> str:
            await asyncio.sleep(60)
            return "never"

        return Background(description="forever", fn=work)

    model = ScriptedModel([tool_use(call("forever", {}, id="f1")), text("ok")])
    run = await Agent(model=model, tools=[forever]).run("go")
    (handle,) = run.background_tasks
    assert isinstance(handle, BackgroundTaskHandle)
    assert handle.stop("the user stopped it")
    (late,) = await await_background_tasks([handle], wait_at_most=1.0)
    assert late.result.is_error
    assert late.result.text == 'Tool "forever" was stopped: the user stopped it'
    assert not handle.stop()  # already done


async def test_background_results_convert_like_any_tool_output() -> None:
    @tool
    async def structured() -> Background:
        """Returns JSON later."""

        async def work() -> dict[str, int]:
            return {"n": 3}

        return Background(description="json", fn=work)

    model = ScriptedModel([tool_use(call("structured", {}, id="s1")), text("ok")])
    run = await Agent(model=model, tools=[structured]).run("go")
    (late,) = await await_background_tasks(list(run.background_tasks), wait_at_most=1.0)
    assert isinstance(late.result, ToolResult)
    assert late.result.text == '{"n":3}'
    assert late.task_id == "task_s1"
