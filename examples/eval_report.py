"""An eval report: three triage cases, checks on each trace, a markdown table of pass rates.

Runs offline against dive's Anthropic simulator (a scripted model behind the official SDK)::

    uv run python examples/eval_report.py
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

import dive.testing.anthropic as anth
from dive.executor import (
    EvalCase,
    Executor,
    ExecutorTool,
    SubmitTool,
    no_errors,
    required_tool_calls,
    result_check,
    run_evals,
)
from dive.prompts import Prompt
from dive.providers.anthropic import AnthropicModel


class Triage(BaseModel):
    label: Literal["bug", "feature", "question"]
    priority: Literal["p0", "p1", "p2"]


@dataclass
class Issue:
    title: str
    body: str

    def bind(self, prompt: Prompt) -> Prompt:
        return prompt.bind_xml("issue", {"title": self.title, "body": self.body}, root="issue")


async def similar_issues(query: str) -> dict[str, list[str]]:
    """Search earlier issues."""
    return {"matches": [f"#12 {query} (closed)"]}


CASES = [
    EvalCase(name="crash", request=Issue("App crashes on start", "Since 2.1, every launch.")),
    EvalCase(name="dark mode", request=Issue("Dark mode", "Please add a dark theme.")),
    EvalCase(name="how to", request=Issue("How do I export?", "Where is export?")),
]
EXPECTED = {"crash": "bug", "dark mode": "feature", "how to": "question"}


def _script(sim: anth.AnthropicSimulator) -> None:
    answers = [("bug", "p0"), ("feature", "p2"), ("bug", "p2")]  # the last one is wrong
    for label, priority in answers:
        sim.add(
            anth.tool_use("similar_issues", {"reasoning": "duplicates?", "query": label}),
            anth.tool_use(
                "submit_result",
                {"reasoning": "triaged", "result": {"label": label, "priority": priority}},
            ),
        )


async def main() -> None:
    with anth.simulator() as sim:
        _script(sim)
        model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="offline")
        executor = Executor(
            model,
            Prompt("Triage this issue.\n{{issue}}"),
            response_type=Triage,
            submit_tool=SubmitTool(),
        )
        tools = {"similar_issues": ExecutorTool.from_function(similar_issues)}
        cases = [EvalCase(name=c.name, request=c.request, tools=tools) for c in CASES]
        labels = iter(EXPECTED.values())  # the runner checks the cases in order

        def right_label(result: dict[str, str]) -> str | None:
            want = next(labels)
            return None if result["label"] == want else f"label {result['label']}, want {want}"

        report = await run_evals(
            executors={"claude-sonnet-4-6": executor},
            cases=cases,
            evals={
                "correct label": [result_check(right_label)],
                "searches first": [required_tool_calls("similar_issues")],
                "no errors": [no_errors()],
            },
        )
        await model.aclose()
    print(report.markdown())


if __name__ == "__main__":
    asyncio.run(main())
