"""Prompt caching in a 10-round review with a 20k-token payload: the cost it saves.

The simulator does the API's cache accounting (breakpoints, lookback, minimums); the cost
is the provider layer's price for each round's usage buckets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

import pytest
from pydantic import BaseModel

import dive.testing.anthropic as anth
from dive.executor import (
    ExecutionTrace,
    Executor,
    ExecutorOptions,
    ExecutorTool,
    ExecutorToolContext,
    Finding,
    MaxRoundsExceeded,
    SubmissionContext,
    SubmitTool,
)
from dive.messages import ToolCall, ToolDefinition
from dive.prompts import Prompt
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.tools import Suspend

FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)


class Verdict(BaseModel):
    decision: Literal["approve", "request_changes"]
    summary: str


@dataclass
class Review:
    diff: str

    def bind(self, prompt: Prompt) -> Prompt:
        return prompt.bind_json("diff", self.diff)


async def read_file(path: str) -> dict[str, str]:
    """Read a file of the change."""
    return {"path": path, "text": "x = 1\n" * 50}


async def _review(caching: bool) -> ExecutionTrace:
    traces: list[ExecutionTrace] = []

    def keep(v: Verdict, ctx: SubmissionContext) -> list[Finding]:
        traces.append(ctx.trace)
        return []

    with anth.simulator(assert_consumed=True) as sim:
        for i in range(9):
            sim.add(anth.tool_use("read_file", {"reasoning": "look", "path": f"f{i}.py"}))
        sim.add(
            anth.tool_use(
                "submit_result",
                {"reasoning": "done", "result": {"decision": "approve", "summary": "ok"}},
            )
        )
        model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="test", retry=FAST)
        ex = Executor(
            model,
            Prompt("Review:\n{{diff}}"),
            response_type=Verdict,
            submit_tool=SubmitTool(),
            system_instructions=Prompt("You review code changes carefully."),
            result_validators=[keep],
            options=ExecutorOptions(caching=caching),
        )
        diff = "+ line of a large change that the reviewer reads\n" * 2000  # ≈ 20k tokens
        await ex.execute(
            Review(diff=diff), tools={"read_file": ExecutorTool.from_function(read_file)}
        )
        await model.aclose()
    return traces[0]


def _cost(trace: ExecutionTrace) -> float:
    costs = [r.cost for r in trace.rounds]
    assert all(c is not None for c in costs), "every round has a price"
    return sum(c for c in costs if c is not None)


async def test_caching_cuts_a_ten_round_review_to_a_quarter_of_the_cost() -> None:
    cached = await _review(caching=True)
    uncached = await _review(caching=False)
    assert len(cached.rounds) == len(uncached.rounds) == 10
    assert uncached.rounds[0].input_tokens > 18_000
    assert all(r.cache_read_tokens > 18_000 for r in cached.rounds[1:])
    assert all(r.cache_read_tokens == 0 for r in uncached.rounds)
    ratio = _cost(cached) / _cost(uncached)
    print(f"cost with caching {_cost(cached):.4f} vs without {_cost(uncached):.4f}: {ratio:.3f}")
    assert ratio <= 0.25


async def test_executions_differing_only_in_the_suffix_share_the_prompt_cache() -> None:
    with anth.simulator(assert_consumed=True) as sim:
        for _ in range(2):
            sim.add(
                anth.tool_use(
                    "submit_result",
                    {"reasoning": "r", "result": {"decision": "approve", "summary": "ok"}},
                )
            )
        model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="test", retry=FAST)
        diff = "+ line of a large change that the reviewer reads\n" * 2000
        usages: list[int] = []
        traces: list[ExecutionTrace] = []

        def keep(v: Verdict, ctx: SubmissionContext) -> list[Finding]:
            traces.append(ctx.trace)
            return []

        for focus in ("security", "performance"):
            ex = Executor(
                model,
                Prompt("Review:\n{{diff}}"),
                response_type=Verdict,
                submit_tool=SubmitTool(),
                user_prompt_suffix=Prompt("Focus on security.")
                if focus == "security"
                else Prompt("Focus on performance."),
                result_validators=[keep],
            )
            await ex.execute(Review(diff=diff))
            usages.append(traces[-1].rounds[0].cache_read_tokens)
        await model.aclose()
        first = sim.requests[0]["messages"][0]["content"]
        assert first[0]["cache_control"] == {"type": "ephemeral"}
        assert first[1]["text"] == "Focus on security."
    assert usages[0] == 0
    assert usages[1] > 18_000  # the second execution read the prompt block from the cache


def _markers(body: Any) -> list[tuple[str, int, int]]:
    """Where the request's cache breakpoints are: (part, message index, block index)."""
    out: list[tuple[str, int, int]] = []
    for i, t in enumerate(body.get("tools", [])):
        if t.get("cache_control"):
            out.append(("tool", i, 0))
    system = body.get("system")
    if isinstance(system, list):
        for i, b in enumerate(cast(list[dict[str, Any]], system)):
            if b.get("cache_control"):
                out.append(("system", i, 0))
    for m, message in enumerate(body["messages"]):
        content = message["content"]
        if isinstance(content, list):
            for b, block in enumerate(cast(list[dict[str, Any]], content)):
                if block.get("cache_control"):
                    out.append(("message", m, b))
    return out


async def test_breakpoints_on_every_round_stay_within_four_and_move_with_the_tail() -> None:
    with anth.simulator(assert_consumed=True) as sim:
        for i in range(5):
            sim.add(anth.tool_use("read_file", {"reasoning": "look", "path": f"f{i}.py"}))
        sim.add(
            anth.tool_use(
                "submit_result",
                {"reasoning": "done", "result": {"decision": "approve", "summary": "ok"}},
            )
        )
        model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="test", retry=FAST)
        ex = Executor(
            model,
            Prompt("Review:\n{{diff}}"),
            response_type=Verdict,
            submit_tool=SubmitTool(),
            system_instructions=Prompt("You review code changes carefully."),
        )
        tools = {"read_file": ExecutorTool.from_function(read_file)}
        await ex.execute(Review(diff="+ change\n" * 3000), tools=tools)
        await model.aclose()
        bodies = [r.body for r in sim.requests]
    for n, body in enumerate(bodies):
        marks = _markers(body)
        assert len(marks) <= 4, (n, marks)
        assert ("tool", len(body["tools"]) - 1, 0) in marks  # the last tool, sorted by name
        assert any(p == "system" for p, _, _ in marks)
        newest = len(body["messages"]) - 1
        assert any(p == "message" and m == newest for p, m, _ in marks), (n, marks)
        if n > 0:  # the previous request's newest message still marked: it reads that entry
            previous = len(bodies[n - 1]["messages"]) - 1
            assert any(p == "message" and m == previous for p, m, _ in marks), (n, marks)


def _suffix_executor(model: AnthropicModel, **kwargs: Any) -> Executor[Review, Verdict]:
    return Executor(
        model,
        Prompt("Review:\n{{diff}}"),
        response_type=Verdict,
        submit_tool=SubmitTool(),
        system_instructions=Prompt("You review code changes carefully."),
        user_prompt_suffix=Prompt("Focus on security."),
        **kwargs,
    )


def _many_reads(round_: int, n: int) -> Any:
    return anth.reply(
        blocks=[
            anth.tool_use_block("read_file", {"reasoning": "look", "path": f"r{round_}f{i}.py"})
            for i in range(n)
        ]
    )


async def test_with_a_suffix_the_prompt_marker_moves_on_and_is_never_stored() -> None:
    with anth.simulator(assert_consumed=True) as sim:
        sim.add(_many_reads(0, 2), _many_reads(1, 2))
        model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="test", retry=FAST)
        ex = _suffix_executor(model, options=ExecutorOptions(max_rounds=2))
        tools = {"read_file": ExecutorTool.from_function(read_file)}
        with pytest.raises(MaxRoundsExceeded) as info:
            await ex.execute(Review(diff="+ change\n" * 3000), tools=tools)
        await model.aclose()
        bodies = [r.body for r in sim.requests]
    first, second = (_markers(b) for b in bodies)
    assert ("message", 0, 0) in first
    assert ("message", 0, 1) in first
    assert ("message", 0, 1) in second  # the previous request's newest block reads its entry
    assert ("message", 0, 0) not in second  # the prompt's own marker is gone
    assert len(second) == 4
    # dive's markers live on the outgoing requests only, never in the history
    assert all(
        getattr(b, "cache_control", None) is None for m in info.value.messages for b in m.content
    )


async def test_a_suspension_keeps_no_cache_marker() -> None:
    from dive.executor import ExecutionSuspended

    with anth.simulator(assert_consumed=True) as sim:
        sim.add(anth.tool_use("ask_human", {"question": "Ship it?"}))
        model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="test", retry=FAST)
        ask = ExecutorTool(
            definition=ToolDefinition(name="ask_human", description="Ask.", input_schema={}),
            handler=_ask,
        )
        ex = _suffix_executor(model, suspend_tool=ask)
        with pytest.raises(ExecutionSuspended) as info:
            await ex.execute(Review(diff="+ change\n" * 300))
        await model.aclose()
    suspension = info.value.suspension
    stored = [*suspension.history, *suspension.state.turn_messages]
    assert stored
    assert all(getattr(b, "cache_control", None) is None for m in stored for b in m.content)


async def _ask(call: ToolCall, ctx: ExecutorToolContext[Any]) -> Any:
    return Suspend("Ship it?")


async def _suffix_review(caching: bool) -> ExecutionTrace:
    traces: list[ExecutionTrace] = []

    def keep(v: Verdict, ctx: SubmissionContext) -> list[Finding]:
        traces.append(ctx.trace)
        return []

    with anth.simulator(assert_consumed=True) as sim:
        for r in range(9):
            sim.add(_many_reads(r, 12))
        sim.add(
            anth.tool_use(
                "submit_result",
                {"reasoning": "done", "result": {"decision": "approve", "summary": "ok"}},
            )
        )
        model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="test", retry=FAST)
        ex = _suffix_executor(
            model, result_validators=[keep], options=ExecutorOptions(caching=caching)
        )
        diff = "+ line of a large change that the reviewer reads\n" * 2000  # ≈ 20k tokens
        await ex.execute(
            Review(diff=diff), tools={"read_file": ExecutorTool.from_function(read_file)}
        )
        await model.aclose()
    return traces[0]


async def test_a_suffixed_review_with_many_calls_per_round_keeps_its_cache_savings() -> None:
    cached = await _suffix_review(caching=True)
    uncached = await _suffix_review(caching=False)
    assert len(cached.rounds) == len(uncached.rounds) == 10
    # every round reads all the previous round sent (nothing is sent uncached)
    assert all(r.input_tokens == 0 for r in cached.rounds)
    for before, after in zip(cached.rounds, cached.rounds[1:], strict=False):
        assert after.cache_read_tokens == before.cache_read_tokens + before.cache_creation_tokens
    ratio = _cost(cached) / _cost(uncached)
    print(f"suffix mode, 12 calls per round: {ratio:.3f} of the uncached cost")
    assert ratio <= 0.3  # the rest is output tokens and the first round's cache write
