"""Cost: genai-prices per provider (TTLs, long-context tiers, server tools), overrides, totals.

The expected dollars are the providers' list prices as the locked ``genai-prices`` carries
them; each case says which price it exercises.
"""

from __future__ import annotations

from typing import Any

import pytest

from dive import Agent, tool
from dive.agent import MessageEvent
from dive.errors import UserError
from dive.llm import PricingInfo, Usage, cost_of
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.providers.openai._responses import responses_response
from dive.sessions import SQLiteSessionStore
from dive.testing import anthropic as sim_anthropic

M = 1_000_000
FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)

CASES = [
    # Claude Sonnet 4.5: $3 in, $15 out, $3.75 5-minute writes, $6 1-hour writes, $0.30 reads
    ("anthropic", "claude-sonnet-4-5", Usage(input_tokens=100_000, output_tokens=0), 0.3),
    ("anthropic", "claude-sonnet-4-5", Usage(input_tokens=0, output_tokens=100_000), 1.5),
    (
        "anthropic",
        "claude-sonnet-4-5",
        Usage(input_tokens=0, output_tokens=0, cache_read_input_tokens=100_000),
        0.03,
    ),
    (
        "anthropic",
        "claude-sonnet-4-5",
        Usage(input_tokens=0, output_tokens=0, cache_creation_input_tokens=100_000),
        0.375,
    ),
    (  # the 1-hour TTL is priced apart from the 5-minute one
        "anthropic",
        "claude-sonnet-4-5",
        Usage(
            input_tokens=0,
            output_tokens=0,
            cache_creation_input_tokens=100_000,
            cache_creation_1h_input_tokens=100_000,
        ),
        0.6,
    ),
    (  # long context: above 200k input tokens the whole request is at $6 / $22.50 / $0.60
        "anthropic",
        "claude-sonnet-4-5",
        Usage(input_tokens=150_000, output_tokens=10_000, cache_read_input_tokens=100_000),
        150_000 * 6 / M + 10_000 * 22.5 / M + 100_000 * 0.6 / M,
    ),
    (  # server tools: web search at $10 per 1,000
        "anthropic",
        "claude-sonnet-4-5",
        Usage(input_tokens=0, output_tokens=0, web_search_requests=3),
        0.03,
    ),
    # GPT-4o: $2.50 in, $10 out, $1.25 cached input
    (
        "openai",
        "gpt-4o",
        Usage(input_tokens=100_000, output_tokens=10_000, cache_read_input_tokens=100_000),
        0.25 + 0.1 + 0.125,
    ),
    ("openai", "gpt-4o", Usage(input_tokens=0, output_tokens=0, web_search_requests=2), 0.02),
    # Gemini 2.5 Pro: $1.25 / $10 up to 200k input, $2.50 / $15 above
    ("google", "gemini-2.5-pro", Usage(input_tokens=100_000, output_tokens=10_000), 0.225),
    ("google", "gemini-2.5-pro", Usage(input_tokens=300_000, output_tokens=10_000), 0.9),
]


@pytest.mark.parametrize(("provider", "model", "usage", "dollars"), CASES)
def test_list_prices_from_genai_prices(
    provider: str, model: str, usage: Usage, dollars: float
) -> None:
    assert cost_of(usage, provider=provider, model=model) == pytest.approx(dollars)  # pyright: ignore[reportUnknownMemberType]


@pytest.mark.parametrize(
    ("provider", "model"),
    [("openai", "my-fine-tune-that-no-one-prices"), ("openai-compatible", "llama3"), ("x", "y")],
)
def test_an_unpriced_model_costs_unknown_never_zero(provider: str, model: str) -> None:
    usage = Usage(input_tokens=10, output_tokens=1)
    assert cost_of(usage, provider=provider, model=model) is None
    assert (usage.with_cost(0.5) + usage.with_cost(None)).cost is None  # unknown stays unknown
    assert "cost unknown" in str(usage.with_cost(None))
    assert Usage.ZERO.cost == 0.0


def test_a_private_price_overrides_and_can_have_a_long_context_tier() -> None:
    long = PricingInfo(input_per_mtok=2.0, output_per_mtok=8.0)
    mine = PricingInfo(
        input_per_mtok=1.0,
        output_per_mtok=4.0,
        cache_read_per_mtok=0.05,
        long_context_threshold=128_000,
        long_context=long,
    )
    small = Usage(input_tokens=100_000, output_tokens=1_000, cache_read_input_tokens=20_000)
    assert cost_of(small, provider="openai", model="gpt-4o", override=mine) == pytest.approx(  # pyright: ignore[reportUnknownMemberType]
        0.1 + 0.004 + 0.001
    )
    big = Usage(input_tokens=130_000, output_tokens=1_000)
    assert cost_of(big, provider="x", model="unpriced", override=mine) == pytest.approx(  # pyright: ignore[reportUnknownMemberType]
        0.26 + 0.008
    )
    with pytest.raises(UserError, match="together"):
        PricingInfo(input_per_mtok=1, output_per_mtok=1, long_context_threshold=10)


def test_openai_hosted_web_searches_are_counted_and_priced() -> None:
    raw: dict[str, Any] = {
        "id": "resp_1",
        "model": "gpt-4o-2024-08-06",
        "status": "completed",
        "output": [
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {"type": "web_search_call", "id": "ws_2", "status": "completed"},
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "found it", "annotations": []}],
            },
        ],
        "usage": {"input_tokens": 1000, "output_tokens": 10},
    }
    response = responses_response(raw, "gpt-4o")
    assert response.usage.web_search_requests == 2
    cost = cost_of(response.usage, provider="openai", model="gpt-4o")
    assert cost == pytest.approx(1000 * 2.5 / M + 10 * 10 / M + 0.02)  # pyright: ignore[reportUnknownMemberType]


@tool(effect_type="read_only")
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


async def test_turn_and_session_totals_are_the_sum_of_each_calls_cost(tmp_path: Any) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    per_call: list[float] = []

    def on_event(event: object) -> None:
        if isinstance(event, MessageEvent):
            assert event.usage.cost is not None
            per_call.append(event.usage.cost)

    with sim_anthropic.simulator() as sim:
        sim.add(sim_anthropic.tool_use("lookup", {"key": "a"}), "one", "two")
        model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="t", retry=FAST)
        agent = Agent(model=model, tools=[lookup], session=store.session("s"))
        try:
            first = await agent.run("first", on_event=on_event)
            second = await agent.run("second", on_event=on_event)
        finally:
            await model.aclose()
    assert len(per_call) == 3
    assert first.usage.cost == pytest.approx(sum(per_call[:2]))  # pyright: ignore[reportUnknownMemberType]
    assert second.usage.cost == pytest.approx(per_call[2])  # pyright: ignore[reportUnknownMemberType]
    total = await store.session("s").total_usage()
    assert total.cost == pytest.approx(sum(per_call))  # pyright: ignore[reportUnknownMemberType]
    assert total.requests == 3
    reopened = SQLiteSessionStore(tmp_path / "s.db")  # and it survives a reopen
    assert (await reopened.session("s").total_usage()).cost == pytest.approx(sum(per_call))  # pyright: ignore[reportUnknownMemberType]
    await store.close()
    await reopened.close()


async def test_an_executions_trace_totals_its_rounds() -> None:
    from pydantic import BaseModel

    from dive.executor import Executor, SubmitTool, use_tracer
    from dive.prompts import NoBindings, Prompt

    class Answer(BaseModel):
        ok: bool

    with sim_anthropic.simulator() as sim:
        sim.add(
            sim_anthropic.tool_use("lookup", {"key": "k"}),
            sim_anthropic.tool_use("submit_result", {"reasoning": "r", "result": {"ok": True}}),
        )
        model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="t", retry=FAST)
        traces: list[Any] = []

        class Collect:
            def record(self, trace: Any) -> None:
                traces.append(trace)

        ex = Executor(model, Prompt("Check it."), response_type=Answer, submit_tool=SubmitTool())
        try:
            with use_tracer(Answer, Collect()):
                assert (await ex.execute(NoBindings())).ok
        finally:
            await model.aclose()
    [trace] = traces
    costs = [r.cost for r in trace.rounds]
    assert len(costs) == 2
    assert all(c is not None and c > 0 for c in costs)
    assert trace.cost == pytest.approx(sum(costs))  # pyright: ignore[reportUnknownMemberType]
    assert trace.input_tokens > 0
    assert trace.output_tokens > 0
