"""Eval checks over traces, the LLM judge, and the runner's markdown report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

import dive.testing.anthropic as anth
from dive.executor import (
    EvalCase,
    ExecutionTrace,
    Executor,
    ExecutorTool,
    Observer,
    SubmitTool,
    TracedCall,
    exact_tool_calls,
    llm_judge,
    no_errors,
    only_tool_calls,
    range_tool_calls,
    required_tool_calls,
    result_check,
    run_evals,
    use_tracer,
)
from dive.prompts import Prompt
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.testing import ScriptedModel, call, tool_use

FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)


class Label(BaseModel):
    label: Literal["bug", "feature"]


@dataclass
class Issue:
    text: str

    def bind(self, prompt: Prompt) -> Prompt:
        return prompt.bind_json("text", self.text)


def _trace(*calls: TracedCall, result: Any = None, error: str | None = None) -> ExecutionTrace:
    return ExecutionTrace(tool_calls=list(calls), result=result, error=error)


def _run(check: Any, trace: ExecutionTrace) -> Observer:
    obs = Observer()
    check(obs, trace)
    return obs


def test_tool_call_count_checks_ignore_the_commit_and_rejections() -> None:
    trace = _trace(
        TracedCall(id="1", name="search"),
        TracedCall(id="2", name="submit_result", recoverable=True, error="bad"),
        TracedCall(id="3", name="submit_result", terminal=True),
        result={"label": "bug"},
    )
    assert not _run(exact_tool_calls(1), trace).failures
    assert _run(exact_tool_calls(2), trace).failures == ["expected exactly 2 tool call(s), got 1"]
    assert not _run(range_tool_calls(1, 3), trace).failures
    assert not _run(only_tool_calls("search"), trace).failures
    assert _run(required_tool_calls("fetch"), trace).failures == ["never called ['fetch']"]
    assert (
        _run(result_check(lambda r: None if r["label"] == "bug" else "wrong"), trace).failures == []
    )
    assert _run(result_check(lambda r: None), _trace()).failures[0].startswith("no result")


def test_no_errors_grades_recovered_failures_and_fails_otherwise() -> None:
    recovered = _trace(
        TracedCall(id="1", name="search", error="Tool execution error: timeout"),
        TracedCall(id="2", name="search"),
        TracedCall(id="3", name="submit_result", terminal=True),
        result={},
    )
    obs = _run(no_errors(), recovered)
    assert not obs.failures
    assert obs.grades[0][0] == 1.0
    assert "recovered from 1 tool-call error(s)" in obs.grades[0][1]
    only_failed = _trace(TracedCall(id="1", name="search", error="boom"), result={})
    assert _run(no_errors(), only_failed).failures == ["no tool call succeeded"]
    transient = _trace(error="RateLimitedError: slow down")
    assert _run(no_errors(), transient).grades[0][1].startswith("infrastructure error")
    assert _run(no_errors(), _trace(error="MaxRoundsExceeded: x")).failures


async def test_the_judge_grades_with_a_model() -> None:
    judge = ScriptedModel(
        [tool_use(call("submit_result", {"score": 0.75, "reasoning": "mostly right"}))]
    )
    obs = Observer()
    out = llm_judge(judge, "The label must match the issue.")(obs, _trace(result={"label": "bug"}))
    assert out is not None
    await out
    assert obs.grades == [(0.75, "mostly right")]


async def test_the_runner_reports_pass_rates_by_eval_model_and_case() -> None:
    async def lookup(term: str) -> dict[str, str]:
        """Look up a term."""
        return {"term": term}

    with anth.simulator() as sim:
        sim.add(
            anth.tool_use("lookup", {"reasoning": "r", "term": "crash"}),
            anth.tool_use("submit_result", {"reasoning": "r", "result": {"label": "bug"}}),
            anth.tool_use("submit_result", {"reasoning": "r", "result": {"label": "bug"}}),
        )
        model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="t", retry=FAST)
        ex = Executor(
            model, Prompt("Label: {{text}}"), response_type=Label, submit_tool=SubmitTool()
        )
        tools = {"lookup": ExecutorTool.from_function(lookup)}
        report = await run_evals(
            executors={"sonnet": ex},
            cases=[
                EvalCase(name="crash", request=Issue("it crashes"), tools=tools),
                EvalCase(name="wish", request=Issue("add dark mode"), tools=tools),
            ],
            evals={
                "label is bug": [result_check(lambda r: None if r["label"] == "bug" else "no")],
                "uses lookup": [required_tool_calls("lookup")],
            },
        )
        await model.aclose()
    text = report.markdown()
    assert "## label is bug" in text
    assert "| sonnet | crash | 100% (1/1) |" in text
    assert "| sonnet | wish | 0% (0/1) | - | never called ['lookup'] |" in text


def test_use_tracer_receives_every_trace() -> None:
    seen: list[ExecutionTrace] = []

    class Keep:
        def record(self, trace: ExecutionTrace) -> None:
            seen.append(trace)

    model = ScriptedModel(
        [tool_use(call("submit_result", {"reasoning": "r", "result": {"label": "bug"}}))]
    )
    ex = Executor(model, Prompt("x {{text}}"), response_type=Label, submit_tool=SubmitTool())
    with use_tracer(Label, Keep()):
        ex.execute_sync(Issue("t"))
    assert len(seen) == 1
    assert seen[0].result == {"label": "bug"}
