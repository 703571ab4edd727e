"""``ModelRetry`` raised in a tool: the quiet "try again with this feedback" path.

As in pydantic-ai: the message goes back to the model as the call's (error) result, with
"Fix the errors and try again."; nothing is logged at ERROR and no traceback is kept; the call
is not a failure. Each tool has a budget of consecutive retries (``Limits.max_tool_retries``,
1 by default, like pydantic-ai's ``retries``); a call over it fails like a tool error. The
retry policy never re-runs a call that asked the model to retry.
"""

from __future__ import annotations

import logging

import pytest

from dive import Agent, Limits, ModelRetry, tool
from dive.messages import ToolRetryPolicy
from dive.testing import ScriptedModel, call, text, tool_use

USERS = {"John Doe": 123}


@tool(effect_type="read_only")
async def user_id(name: str) -> int:
    """A user's id from their full name."""
    found = USERS.get(name)
    if found is None:
        raise ModelRetry(f"No user named {name!r}; give the full name")
    return found


@tool(effect_type="read_only")
async def always_retry(q: str) -> str:
    """Never satisfied."""
    raise ModelRetry(f"not {q!r}, try something else")


def _results(model: ScriptedModel, request: int) -> list[tuple[str, bool]]:
    return [
        (r.text, r.is_error)
        for m in model.requests[request].messages
        if (r := m.tool_result) is not None
    ]


async def test_a_retry_is_feedback_to_the_model_and_nothing_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = ScriptedModel(
        [
            tool_use(call("user_id", {"name": "John"}, id="c1")),
            tool_use(call("user_id", {"name": "John Doe"}, id="c2")),
            text("John Doe is 123."),
        ]
    )
    with caplog.at_level(logging.DEBUG, logger="dive"):
        result = await Agent(model=model, tools=[user_id]).run("Who is John?")
    assert result.status == "completed"
    assert _results(model, 1) == [
        ("No user named 'John'; give the full name\n\nFix the errors and try again.", True)
    ]
    assert _results(model, 2)[-1] == ("123", False)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert all(r.exc_info is None for r in caplog.records)
    records = {c.id: c for c in result.turn.tool_calls}
    assert records["c1"].state == "completed"
    assert records["c1"].error is None  # asked for a retry: not a failure
    assert records["c2"].error is None


async def test_retries_over_the_tools_budget_fail_the_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = ScriptedModel(
        [
            tool_use(call("always_retry", {"q": "a"}, id="c1")),
            tool_use(call("always_retry", {"q": "b"}, id="c2")),
            tool_use(call("always_retry", {"q": "c"}, id="c3")),
            text("I give up."),
        ]
    )
    agent = Agent(model=model, tools=[always_retry], limits=Limits(max_tool_retries=2))
    with caplog.at_level(logging.DEBUG, logger="dive"):
        result = await agent.run("go")
    assert result.status == "completed"
    assert _results(model, 1)[-1][1] is True
    assert _results(model, 2)[-1][0].endswith("Fix the errors and try again.")
    last_text, last_error = _results(model, 3)[-1]
    assert last_error is True
    assert last_text == (
        "Tool execution error: not 'c', try something else (the tool asked for a retry "
        "more than 2 times in a row; limits.max_tool_retries)"
    )
    records = {c.id: c for c in result.turn.tool_calls}
    assert records["c1"].error is None
    assert records["c2"].error is None
    assert records["c3"].error is not None
    assert "ModelRetry" in records["c3"].error
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING
    assert warnings[0].exc_info is None


async def test_the_default_budget_is_one_retry_like_pydantic_ai() -> None:
    model = ScriptedModel(
        [
            tool_use(call("always_retry", {"q": "a"}, id="c1")),
            tool_use(call("always_retry", {"q": "b"}, id="c2")),
            text("done"),
        ]
    )
    result = await Agent(model=model, tools=[always_retry]).run("go")
    records = {c.id: c for c in result.turn.tool_calls}
    assert records["c1"].error is None
    assert records["c2"].error is not None
    assert Limits().max_tool_retries == 1


async def test_the_budget_is_per_tool_and_a_success_resets_it() -> None:
    model = ScriptedModel(
        [
            tool_use(call("user_id", {"name": "John"}, id="c1")),
            tool_use(call("always_retry", {"q": "a"}, id="c2")),  # another tool's own budget
            tool_use(call("user_id", {"name": "John Doe"}, id="c3")),  # success: reset
            tool_use(call("user_id", {"name": "Jo"}, id="c4")),
            text("done"),
        ]
    )
    result = await Agent(model=model, tools=[user_id, always_retry]).run("go")
    records = {c.id: c for c in result.turn.tool_calls}
    assert [records[i].error for i in ("c1", "c2", "c3", "c4")] == [None, None, None, None]


async def test_the_retry_policy_does_not_rerun_a_call_that_asked_for_a_retry() -> None:
    runs: list[str] = []

    @tool(
        effect_type="read_only",
        retry_policy=ToolRetryPolicy(max_attempts=3, backoff=0.0, max_backoff=0.0),
    )
    async def picky(q: str) -> str:
        """Asks for a retry."""
        runs.append(q)
        raise ModelRetry("be specific")

    model = ScriptedModel([tool_use(call("picky", {"q": "x"})), text("ok")])
    await Agent(model=model, tools=[picky]).run("go")
    assert runs == ["x"]


def test_a_negative_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="max_tool_retries"):
        Limits(max_tool_retries=-1)
