"""Terminal tools end the turn only when they succeed; a result can end the turn itself."""

from __future__ import annotations

from dive import Agent, ToolReturn, tool
from dive.testing import ScriptedModel, call, text, tool_use


@tool(terminal=True)
async def finish(value: int) -> str:
    """Finish with a positive value."""
    if value <= 0:
        raise ValueError("value must be positive")
    return "done"


@tool
async def maybe_stop(stop: bool) -> ToolReturn:
    """Stop the turn when asked."""
    return ToolReturn(content="stopping" if stop else "going on", terminal=stop)


async def test_a_failed_terminal_call_does_not_end_the_turn() -> None:
    model = ScriptedModel(
        [tool_use(call("finish", {"value": 0})), tool_use(call("finish", {"value": 2}))]
    )
    result = await Agent(model=model, tools=[finish]).run("go")
    assert result.status == "completed"
    assert len(model.requests) == 2  # the model was told about the error and tried again
    model.assert_consumed()


async def test_a_tool_return_may_end_the_turn() -> None:
    model = ScriptedModel(
        [
            tool_use(call("maybe_stop", {"stop": False})),
            tool_use(call("maybe_stop", {"stop": True})),
        ]
    )
    result = await Agent(model=model, tools=[maybe_stop]).run("go")
    assert result.status == "completed"
    assert len(model.requests) == 2
    assert result.tool_call_results()[-1].result is not None
    model.assert_consumed()


async def test_a_non_terminal_return_goes_on() -> None:
    model = ScriptedModel([tool_use(call("maybe_stop", {"stop": False})), text("ok")])
    result = await Agent(model=model, tools=[maybe_stop]).run("go")
    assert result.output == "ok"
