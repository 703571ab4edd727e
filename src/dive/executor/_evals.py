"""Evaluation: checks over execution traces, and a runner that reports pass rates.

A check is ``fn(observer, trace)``; it calls ``observer.fail(msg)`` for a failure,
``observer.grade(score, reasoning)`` for a graded result and ``observer.log(msg)`` for notes.
``run_evals`` executes every case with every model, ``iterations`` times, runs each eval's
checks on the traces and returns an ``EvalReport`` whose ``markdown()`` groups results by
eval, model and case with pass rates and mean grades.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from dive.errors import ProviderError
from dive.executor._trace import ExecutionTrace

__all__ = [
    "Check",
    "EvalCase",
    "EvalReport",
    "EvalResult",
    "Observer",
    "exact_tool_calls",
    "llm_judge",
    "minimum_tool_calls",
    "no_errors",
    "no_tool_calls",
    "only_tool_calls",
    "range_tool_calls",
    "required_tool_calls",
    "result_check",
    "run_evals",
]


class Observer:
    """What a check reports into: failures, grades, notes, a counter."""

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.grades: list[tuple[float, str]] = []
        self.logs: list[str] = []
        self._count = 0

    def fail(self, message: str) -> None:
        """Record a failure: the check did not pass.

        Args:
            message: what was wrong.
        """
        self.failures.append(message)

    def log(self, message: str) -> None:
        """Record a note for the report.

        Args:
            message: the note.
        """
        self.logs.append(message)

    def grade(self, score: float, reasoning: str) -> None:
        """Record a grade between 0 and 1.

        Args:
            score: the grade, 0 (worst) to 1 (best).
            reasoning: why.
        """
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"a grade is between 0 and 1, got {score}")
        self.grades.append((score, reasoning))

    def increment(self) -> None:
        self._count += 1

    def total(self) -> int:
        return self._count


Check = Callable[[Observer, ExecutionTrace], Awaitable[None] | None]


def _investigative(trace: ExecutionTrace) -> list[str]:
    """Names of the calls that did work: not the commit, not rejected submissions."""
    return [c.name for c in trace.tool_calls if not c.terminal and not c.recoverable]


def exact_tool_calls(n: int) -> Check:
    """Exactly ``n`` investigative tool calls (not the commit, not rejected submissions).

    Args:
        n: how many.
    """

    def check(obs: Observer, trace: ExecutionTrace) -> None:
        got = len(_investigative(trace))
        if got != n:
            obs.fail(f"expected exactly {n} tool call(s), got {got}")

    return check


def minimum_tool_calls(n: int) -> Check:
    """At least ``n`` investigative tool calls.

    Args:
        n: how many.
    """

    def check(obs: Observer, trace: ExecutionTrace) -> None:
        got = len(_investigative(trace))
        if got < n:
            obs.fail(f"expected at least {n} tool call(s), got {got}")

    return check


def range_tool_calls(lo: int, hi: int) -> Check:
    """Between ``lo`` and ``hi`` investigative tool calls, both included.

    Args:
        lo: the fewest allowed.
        hi: the most allowed.
    """

    def check(obs: Observer, trace: ExecutionTrace) -> None:
        got = len(_investigative(trace))
        if not lo <= got <= hi:
            obs.fail(f"expected {lo}…{hi} tool call(s), got {got}")

    return check


def no_tool_calls() -> Check:
    return exact_tool_calls(0)


def only_tool_calls(*names: str) -> Check:
    """No investigative call to a tool outside ``names``.

    Args:
        names: the tools that may be called.
    """

    def check(obs: Observer, trace: ExecutionTrace) -> None:
        other = sorted(set(_investigative(trace)) - set(names))
        if other:
            obs.fail(f"called tools outside {sorted(names)}: {other}")

    return check


def required_tool_calls(*names: str) -> Check:
    """Every tool of ``names`` called at least once.

    Args:
        names: the tools that must be called.
    """

    def check(obs: Observer, trace: ExecutionTrace) -> None:
        missing = sorted(set(names) - set(_investigative(trace)))
        if missing:
            obs.fail(f"never called {missing}")

    return check


def result_check(fn: Callable[[Any], str | None]) -> Check:
    """``fn(result) -> failure message or None``; a missing result fails.

    Args:
        fn: receives the result, returns a failure message or None.
    """

    def check(obs: Observer, trace: ExecutionTrace) -> None:
        if trace.result is None:
            obs.fail(f"no result ({trace.error or 'the run did not commit'})")
            return
        problem = fn(trace.result)
        if problem:
            obs.fail(problem)

    return check


def no_errors(ignore: Sequence[str] = ()) -> Check:
    """No error in the run (transient provider errors are graded, not failed).

    Args:
        ignore: substrings of error texts that do not count.
    """

    def check(obs: Observer, trace: ExecutionTrace) -> None:
        if trace.suspended:
            obs.log("suspended: skipped")
            return
        unknown = [c for c in trace.tool_calls if (c.error or "").startswith("UnknownToolError")]
        if trace.error is not None and not unknown and _transient(trace.error):
            obs.grade(1.0, f"infrastructure error, not the agent's: {trace.error}")
            return
        if trace.error is not None or unknown:
            obs.fail(trace.error or f"called unknown tool(s): {[c.name for c in unknown]}")
            return
        failed = [
            c
            for c in trace.tool_calls
            if c.error and not c.recoverable and not any(i in c.error for i in ignore)
        ]
        if not failed:
            return
        succeeded = [c for c in trace.tool_calls if not c.error and not c.terminal]
        if not succeeded:
            obs.fail("no tool call succeeded")
            return
        named = ", ".join(f"{c.name}: {c.error}" for c in failed[:3])
        obs.grade(1.0, f"run completed; recovered from {len(failed)} tool-call error(s): {named}")

    return check


_TRANSIENT = (
    "ProviderRetriesExhausted",
    "RateLimitedError",
    "OverloadedError",
    "ProviderTimeoutError",
    "ProviderConnectionError",
)


def _transient(error: str) -> bool:
    """Whether a trace's error (``"<ErrorType>: <message>"``) is the provider's, not the run's."""
    return error.split(":", 1)[0] in _TRANSIENT


class _Judgement(BaseModel):
    score: float = Field(ge=0.0, le=1.0)
    reasoning: str


def llm_judge(judge: Any, criteria: str) -> Check:
    """Grade the result with a model (a dive ``Model``) against ``criteria``.

    The judge submits ``{"score": 0…1, "reasoning": "..."}``; no grade fails the check.

    Args:
        judge: the model that grades (a dive ``Model``).
        criteria: what a good result is, in words.
    """
    from dive.agent import Agent

    agent = Agent(
        model=judge,
        output_type=_Judgement,
        instructions="You grade results against criteria. Be strict and brief.",
    )

    async def check(obs: Observer, trace: ExecutionTrace) -> None:
        if trace.result is None:
            obs.fail("no result to judge")
            return
        result = await agent.run(f"Criteria:\n{criteria}\n\nResult:\n{trace.result}")
        verdict = result.output_or(None)
        if verdict is None:
            obs.fail(f"the judge gave no grade: {result}")
            return
        obs.grade(verdict.score, verdict.reasoning)

    return check


# --- running --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalCase:
    """A named request (and its tools) to execute.

    Attributes:
        name: the case's name (in the report).
        request: what the executor is given.
        tools: the tools of the run, by name, if any.
    """

    name: str
    request: Any
    tools: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalResult:
    """One eval's outcome for one model, case and iteration.

    Attributes:
        eval: the eval's name.
        model: the executor's name (one per model).
        case: the case's name.
        iteration: which repetition, from 0.
        failures: every check failure.
        grades: every grade given.
        trace_id: the execution trace's id.
    """

    eval: str
    model: str
    case: str
    iteration: int
    failures: tuple[str, ...]
    grades: tuple[float, ...]
    trace_id: str


@dataclass(frozen=True, slots=True)
class EvalReport:
    """Every result; ``markdown()`` for people.

    Attributes:
        results: every eval's result, per model, case and iteration.
    """

    results: tuple[EvalResult, ...] = field(default=())

    def markdown(self) -> str:
        lines = ["# Eval report", ""]
        for name in dict.fromkeys(r.eval for r in self.results):
            lines += [f"## {name}", "", "| model | case | pass rate | mean grade | failures |"]
            lines.append("|---|---|---|---|---|")
            mine = [r for r in self.results if r.eval == name]
            for model in dict.fromkeys(r.model for r in mine):
                for case in dict.fromkeys(r.case for r in mine if r.model == model):
                    rows = [r for r in mine if r.model == model and r.case == case]
                    failed = sum(1 for r in rows if r.failures)
                    rate = (len(rows) - failed) / len(rows)
                    grades = [g for r in rows for g in r.grades]
                    mean = f"{sum(grades) / len(grades):.2f}" if grades else "-"
                    notes = "; ".join(f for r in rows for f in r.failures)[:200] or "-"
                    lines.append(
                        f"| {model} | {case} | {rate:.0%} ({len(rows) - failed}/{len(rows)}) "
                        f"| {mean} | {notes.replace('|', '/')} |"
                    )
            lines.append("")
        return "\n".join(lines)


class _Collect:
    def __init__(self) -> None:
        self.traces: list[ExecutionTrace] = []

    def record(self, trace: ExecutionTrace) -> None:
        self.traces.append(trace)


async def run_evals(
    *,
    executors: Mapping[str, Any],
    cases: Sequence[EvalCase],
    evals: Mapping[str, Sequence[Check]],
    iterations: int = 1,
) -> EvalReport:
    """Execute every case with every executor (one per model) and run every eval's checks.

    A failed execution still has a trace (its error), which the checks see.

    Args:
        executors: the executors to compare, by name (one per model).
        cases: the cases to execute.
        evals: the checks of each eval, by the eval's name.
        iterations: how often each case runs with each executor.
    """
    from dive.executor._tracers import use_tracer

    results: list[EvalResult] = []
    for model, executor in executors.items():
        for case in cases:
            for i in range(iterations):
                sink = _Collect()
                with use_tracer(executor.response_type, sink):
                    try:
                        await executor.execute(case.request, tools=case.tools)
                    except (Exception, ProviderError):  # recorded in the trace
                        pass
                (trace,) = sink.traces
                for name, checks in evals.items():
                    obs = Observer()
                    for check in checks:
                        out = check(obs, trace)
                        if inspect.isawaitable(out):
                            await out
                    results.append(
                        EvalResult(
                            eval=name,
                            model=model,
                            case=case.name,
                            iteration=i,
                            failures=tuple(obs.failures),
                            grades=tuple(g for g, _ in obs.grades),
                            trace_id=trace.id,
                        )
                    )
    return EvalReport(tuple(results))
