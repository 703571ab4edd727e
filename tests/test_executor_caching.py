"""Prompt caching in a 10-round review with a 20k-token payload: the cost it saves.

The simulator does the API's cache accounting (breakpoints, lookback, minimums); the cost
is the provider layer's price for each round's usage buckets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

from pydantic import BaseModel

import dive.testing.anthropic as anth
from dive.executor import (
    ExecutionTrace,
    Executor,
    ExecutorOptions,
    ExecutorTool,
    Finding,
    SubmissionContext,
    SubmitTool,
)
from dive.prompts import Prompt
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel

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
