"""Per-turn usage limits: each ends the turn incomplete ``usage_limit``, closed correctly."""

from __future__ import annotations

from typing import Any

import pytest

from dive import Agent, UsageLimits, tool
from dive.errors import UserError
from dive.llm import ModelRequest, Usage
from dive.messages import Message, validate_complete_turns
from dive.testing import ScriptedModel, call, text, tool_use

ran: list[str] = []


@tool
async def fetch(key: str) -> str:
    """Fetch a key."""
    ran.append(key)
    return key


@tool
async def store(key: str) -> str:
    """Store a key."""
    ran.append(f"store:{key}")
    return "ok"


def _with_usage(response: Any, **usage: Any) -> Any:
    from dataclasses import replace

    return replace(response, usage=Usage(**usage))


def _check(result: Any, text_in_error: str) -> None:
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "usage_limit"
    assert result.outcome.next == "input"
    assert text_in_error in (result.outcome.error or "")
    validate_complete_turns(result.turn.messages)


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


async def test_request_limit() -> None:
    model = ScriptedModel([tool_use(call("fetch", {"key": str(i)})) for i in range(5)])
    agent = Agent(model=model, tools=[fetch], usage_limits=UsageLimits(requests=2))
    result = await agent.run("go")
    _check(result, "request limit (2)")
    assert len(model.requests) == 2
    assert ran == ["0", "1"]


async def test_tool_call_limit_in_the_middle_of_a_parallel_batch() -> None:
    model = ScriptedModel(
        [
            tool_use(call("fetch", {"key": "a"})),
            tool_use(call("fetch", {"key": "b"}), call("fetch", {"key": "c"})),
            text("never"),
        ]
    )
    agent = Agent(model=model, tools=[fetch], usage_limits=UsageLimits(tool_calls=2))
    result = await agent.run("go")
    _check(result, "tool-call limit (2) would be passed")
    assert ran == ["a"]  # the batch that would pass the limit runs none of its calls
    unrun = [r for r in result.turn.tool_calls if r.state == "not_started"]
    assert len(unrun) == 2


async def test_per_tool_limit() -> None:
    model = ScriptedModel(
        [
            tool_use(call("store", {"key": "a"})),
            tool_use(call("fetch", {"key": "b"})),
            tool_use(call("store", {"key": "c"})),
        ]
    )
    limits = UsageLimits(tool_calls_by_tool={"store": 1})
    result = await Agent(model=model, tools=[fetch, store], usage_limits=limits).run("go")
    _check(result, "limit for tool 'store' (1)")
    assert ran == ["store:a", "b"]


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (UsageLimits(input_tokens=1000), "input token limit (1,000)"),
        (UsageLimits(output_tokens=300), "output token limit (300)"),
        (UsageLimits(total_tokens=1200), "total token limit (1,200)"),
        (UsageLimits(cost=0.01), "cost limit ($0.01)"),
    ],
)
async def test_token_and_cost_limits_stop_before_the_calls_run(
    limits: UsageLimits, message: str
) -> None:
    big = _with_usage(
        tool_use(call("fetch", {"key": "x"})),
        input_tokens=900,
        cache_read_input_tokens=200,
        output_tokens=400,
        cost=0.02,
        requests=1,
    )
    model = ScriptedModel([big, text("never")])
    result = await Agent(model=model, tools=[fetch], usage_limits=limits).run("go")
    _check(result, message)
    assert ran == []
    assert len(model.requests) == 1


async def test_an_unknown_cost_never_ends_a_turn() -> None:
    model = ScriptedModel([tool_use(call("fetch", {"key": "x"})), text("done")])
    result = await Agent(model=model, tools=[fetch], usage_limits=UsageLimits(cost=1e-9)).run("go")
    assert result.status == "completed"


def test_negative_limits_are_refused() -> None:
    with pytest.raises(UserError, match="requests=-1"):
        UsageLimits(requests=-1)
    with pytest.raises(UserError, match="store"):
        UsageLimits(tool_calls_by_tool={"store": -2})


async def test_a_session_limit_counts_earlier_turns(tmp_path: Any) -> None:
    from dive.sessions import SQLiteSessionStore

    sessions = SQLiteSessionStore(tmp_path / "s.db")
    model = ScriptedModel(
        [
            tool_use(call("store", {"key": "a"})),
            text("stored a"),
            tool_use(call("store", {"key": "b"})),
            text("never"),
        ]
    )
    agent = Agent(
        model=model,
        tools=[store],
        session=sessions.session("s1"),
        session_usage_limits=UsageLimits(tool_calls_by_tool={"store": 1}, requests=10),
    )
    first = await agent.run("store a")
    assert first.status == "completed"
    second = await agent.run("store b")
    _check(second, "limit for tool 'store' (1)")
    assert ran == ["store:a"]
    other = Agent(
        model=ScriptedModel([text("hi")]),
        session=sessions.session("s2"),
        session_usage_limits=UsageLimits(tool_calls_by_tool={"store": 1}),
    )
    assert (await other.run("hi")).status == "completed"  # another session, its own budget
    await sessions.close()


async def test_a_session_request_limit_across_turns(tmp_path: Any) -> None:
    from dive.sessions import SQLiteSessionStore

    sessions = SQLiteSessionStore(tmp_path / "s.db")
    model = ScriptedModel([text("one"), text("two"), text("never")])
    agent = Agent(
        model=model, session=sessions.session("s"), session_usage_limits=UsageLimits(requests=2)
    )
    assert (await agent.run("1")).status == "completed"
    assert (await agent.run("2")).status == "completed"
    _check(await agent.run("3"), "request limit (2)")
    assert len(model.requests) == 2
    await sessions.close()


async def test_a_session_cost_limit_counts_known_costs(tmp_path: Any) -> None:
    from dive.sessions import SQLiteSessionStore

    sessions = SQLiteSessionStore(tmp_path / "s.db")
    priced = _with_usage(text("one"), input_tokens=10, output_tokens=5, cost=0.03, requests=1)
    model = ScriptedModel([priced, priced, text("never")])
    agent = Agent(
        model=model, session=sessions.session("s"), session_usage_limits=UsageLimits(cost=0.05)
    )
    assert (await agent.run("1")).status == "completed"
    assert (await agent.run("2")).status == "completed"
    _check(await agent.run("3"), "cost limit ($0.05)")
    await sessions.close()


async def test_count_tokens_first_refuses_a_request_that_would_pass_the_input_limit() -> None:
    from dive.providers import RetryPolicy
    from dive.providers.anthropic import AnthropicModel
    from dive.testing import anthropic as sim_anthropic

    big = "word " * 3000  # the tool result makes the second request far larger than the first

    @tool(effect_type="read_only")
    async def read_book(title: str) -> str:
        """Read a book."""
        return big

    fast = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
    with sim_anthropic.simulator() as sim:
        sim.add(sim_anthropic.tool_use("read_book", {"title": "t"}), "summary")
        model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="t", retry=fast)
        try:
            first_count = await model.count_tokens(
                ModelRequest(messages=(Message.user("summarize t"),), tools=(read_book.definition,))
            )
            limits = UsageLimits(input_tokens=first_count * 3, count_tokens_first=True)
            agent = Agent(model=model, tools=[read_book], usage_limits=limits)
            result = await agent.run("summarize t")
        finally:
            await model.aclose()
    _check(result, "would be passed")
    assert "the next request counts" in (result.outcome.error or "")  # type: ignore[union-attr]
    paths = [r.path for r in sim.requests]
    # the first request was counted and sent; the second was counted and never sent
    assert paths.count("/v1/messages") == 1
    assert paths.count("/v1/messages/count_tokens") == 3
    assert result.usage.requests == 1


async def test_without_a_token_counter_the_limit_is_checked_after_the_response() -> None:
    model = ScriptedModel(
        [
            _with_usage(tool_use(call("fetch", {"key": "a"})), input_tokens=900, output_tokens=5),
            text("never"),
        ]
    )
    limits = UsageLimits(input_tokens=500, count_tokens_first=True)
    result = await Agent(model=model, tools=[fetch], usage_limits=limits).run("go")
    _check(result, "input token limit (500) was reached")
    assert ran == []  # the response used up the budget: its call did not run
