"""A review bot: classify a diff into a typed verdict, with a validator.

Runs offline against dive's Anthropic simulator (through the official SDK) by default, and
against the real API when ANTHROPIC_API_KEY is set::

    uv run python examples/review_bot.py
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from dive.executor import (
    Executor,
    ExecutorTool,
    Finding,
    SubmissionContext,
    SubmitTool,
)
from dive.prompts import Prompt
from dive.providers.anthropic import AnthropicModel

PATCH = """\
--- a/billing.py
+++ b/billing.py
@@ def total(items):
-    return sum(i.price for i in items)
+    return sum(i.price * i.quantity for i in items)
"""


class Verdict(BaseModel):
    decision: Literal["approve", "request_changes"]
    risk: Literal["low", "medium", "high"]
    summary: str = Field(max_length=300)


@dataclass
class Review:
    diff: str

    def bind(self, prompt: Prompt) -> Prompt:
        return prompt.bind_xml("diff", {"patch": self.diff}, root="change")


async def read_tests(module: str) -> dict[str, str]:
    """Read the tests of a module."""
    return {"module": module, "tests": "def test_total(): assert total([]) == 0"}


def mentions_tests(verdict: Verdict, ctx: SubmissionContext) -> list[Finding]:
    if "test" in verdict.summary.lower():
        return []
    return [Finding(kind="review", identifier="tests", details="say how the change is tested")]


def _script(sim: object) -> None:
    import dive.testing.anthropic as anth

    assert isinstance(sim, anth.AnthropicSimulator)
    sim.add(
        anth.tool_use("read_tests", {"reasoning": "is total() tested?", "module": "billing"}),
        anth.tool_use(
            "submit_result",
            {
                "reasoning": "small change",
                "result": {"decision": "approve", "risk": "low", "summary": "Multiplies by qty."},
            },
        ),
        anth.tool_use(
            "submit_result",
            {
                "reasoning": "the test covers only the empty list",
                "result": {
                    "decision": "request_changes",
                    "risk": "medium",
                    "summary": "Quantity is now used; the only test covers an empty list.",
                },
            },
        ),
    )


async def review(model: AnthropicModel) -> Verdict:
    executor = Executor(
        model,
        Prompt("Review this change. Read the tests before deciding.\n{{diff}}"),
        response_type=Verdict,
        submit_tool=SubmitTool(),
        system_instructions=Prompt("You are a careful code reviewer."),
        result_validators=[mentions_tests],
    )
    tools = {"read_tests": ExecutorTool.from_function(read_tests)}
    result = await executor.run(Review(diff=PATCH), tools=tools)
    usage = result.usage
    cost = f"${usage.cost:.4f}" if usage.cost is not None else "an unknown price"
    print(f"{len(result.trace.rounds)} rounds, {usage.total_tokens} tokens, {cost}")
    assert result.output is not None  # this executor has no suspend tool: it completes
    return result.output


async def main() -> None:
    if os.environ.get("ANTHROPIC_API_KEY"):
        print("using the Anthropic API")
        model = AnthropicModel("claude-sonnet-4-6")
        try:
            print(await review(model))
        finally:
            await model.aclose()
        return
    import dive.testing.anthropic as anth

    print("no ANTHROPIC_API_KEY: using dive's offline Anthropic simulator")
    with anth.simulator() as sim:
        _script(sim)
        model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="offline")
        print(await review(model))
        await model.aclose()


if __name__ == "__main__":
    asyncio.run(main())
