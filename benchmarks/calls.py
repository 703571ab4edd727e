"""Function calls per model call: a deterministic measure of the loop's per-call cost.

The W1 workload (10 tool iterations + a final answer per run, a scripted model, an async
``add`` tool) runs under ``cProfile``; the calls the scripted model makes streaming the same
responses on its own are subtracted, as W1 subtracts its time. ``python`` counts calls of
Python functions (a generator or coroutine resumed counts again, as the profiler sees it);
``all`` adds built-in calls (``isinstance``, ``list.append``…). No clock is read, so the
numbers are the same on a loaded machine as on a quiet one; ``tests/test_call_budget.py``
fails when they grow past the budget.
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
from dataclasses import dataclass
from typing import Any, cast

from benchmarks._report import Row
from dive.agent import Agent, Limits
from dive.llm import ModelRequest, ModelResponse
from dive.testing import ScriptedModel, call, text, tool_use

GOAL = 150
BUDGET = 200  # the CI test's ceiling


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _responses() -> list[ModelResponse]:
    out = [tool_use(call("add", {"a": i, "b": 1}, id=f"c{i}")) for i in range(10)]
    return [*out, text("done")]


@dataclass(frozen=True, slots=True)
class Calls:
    """Calls per model call of the loop (the model's own subtracted)."""

    python: float
    all: float


def _counts(profile: cProfile.Profile) -> tuple[int, int]:
    raw: Any = pstats.Stats(profile)
    stats = cast("dict[tuple[str, int, str], tuple[int, int, float, float, Any]]", raw.stats)
    python = builtin = 0
    for (filename, _line, _name), entry in stats.items():
        ncalls = entry[1]
        if filename == "~":
            builtin += ncalls
        else:
            python += ncalls
    return python, builtin


async def _loop(runs: int, streaming: bool) -> tuple[int, int, int]:
    model = ScriptedModel(streaming=streaming)
    for _ in range(runs + 1):
        model.add(*_responses())
    agent = Agent(model=model, tools=[add], limits=Limits(max_model_calls_per_turn=100))
    await agent.run("go")  # warm: first-use caches (schemas, validators) are not per call
    profile = cProfile.Profile()
    model_calls = 0
    profile.enable()
    for _ in range(runs):
        result = await agent.run("go")
        model_calls += result.turn.model_calls
    profile.disable()
    return (*_counts(profile), model_calls)


async def _model_alone(calls: int, streaming: bool) -> tuple[int, int]:
    model = ScriptedModel(streaming=streaming)
    for _ in range(calls // 11 + 1):
        model.add(*_responses())
    request = ModelRequest()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(calls):
        if streaming:
            async for _event in model.stream(request):
                pass
        else:
            await model.generate(request)
    profile.disable()
    return _counts(profile)


def calls_per_model_call(*, runs: int = 10, streaming: bool = True) -> Calls:
    """Calls the loop makes per model call on the W1 workload (deterministic)."""
    python, builtin, model_calls = asyncio.run(_loop(runs, streaming))
    m_python, m_builtin = asyncio.run(_model_alone(model_calls, streaming))
    return Calls(
        python=(python - m_python) / model_calls,
        all=(python + builtin - m_python - m_builtin) / model_calls,
    )


def run_all(*, quick: bool = False) -> list[Row]:
    rows: list[Row] = []
    for streaming in (True, False):
        c = calls_per_model_call(runs=5 if quick else 10, streaming=streaming)
        kind = "streaming" if streaming else "non-streaming"
        rows.append(
            Row(
                f"W1 Python calls per model call, {kind}",
                f"{c.python:.0f}",
                f"<= {GOAL}",
                c.python <= GOAL,
                c.python,
                "calls",
            )
        )
        rows.append(
            Row(f"W1 all calls per model call, {kind}", f"{c.all:.0f}", "-", True, c.all, "calls")
        )
    return rows


if __name__ == "__main__":
    for row in run_all():
        print(row.name, row.shown, row.goal)
