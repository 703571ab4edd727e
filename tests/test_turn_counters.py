"""A record's counts as one value: ``Turn.counters`` and ``SuspensionState.counters``.

The four flat count fields stay the stored shape; ``counters`` reads them as one frozen
``TurnCounters``, for completed, suspended and continued turns, and after a ``SuspensionState``
went through JSON.
"""

from __future__ import annotations

import dataclasses

import pytest

from dive.agent import Agent, Limits
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import Suspend, ToolContext, tool
from dive.turns import SuspensionState, Turn, TurnCounters


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
async def ask(ctx: ToolContext) -> str:
    """Ask a person."""
    return Suspend(prompt="which one?")  # type: ignore[return-value]


def flat(record: Turn | SuspensionState) -> TurnCounters:
    """The record's four count fields, read one by one."""
    return TurnCounters(
        model_calls=record.model_calls,
        executed_tool_calls=record.executed_tool_calls,
        iterations=record.iterations,
        budget_start=record.budget_start,
    )


async def test_a_completed_turn_counts_as_its_fields() -> None:
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2}, id="c1")), text("3")])
    result = await Agent(model=model, tools=[add]).run("1 + 2?")
    turn = result.turn
    assert turn.status == "completed"
    assert turn.counters == flat(turn)
    assert turn.counters == TurnCounters(model_calls=2, executed_tool_calls=1, iterations=2)
    assert Turn.from_json(turn.to_json()).counters == turn.counters


async def test_a_suspended_turn_and_its_state_count_as_their_fields() -> None:
    model = ScriptedModel(
        [tool_use(call("add", {"a": 1, "b": 2}, id="c1"), call("ask", {}, id="c2")), text("ok")]
    )
    agent = Agent(model=model, tools=[add, ask])
    result = await agent.run("add, then ask")
    turn, state = result.turn, result.turn.suspension
    assert turn.status == "suspended"
    assert state is not None
    assert turn.counters == flat(turn)
    assert state.counters == flat(state) == turn.counters
    assert state.counters == TurnCounters(model_calls=1, executed_tool_calls=2, iterations=1)

    kept = SuspensionState.from_json(state.to_json())
    assert kept.counters == state.counters

    done = await agent.run(tool_results={"c2": "the blue one"}, history=[], suspension=kept)
    assert done.status == "completed"
    assert done.turn.counters == flat(done.turn)
    assert done.turn.counters == TurnCounters(model_calls=2, executed_tool_calls=2, iterations=2)


async def test_a_continued_turn_counts_its_fresh_budget() -> None:
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2}, id="c1")), text("3")])
    agent = Agent(
        model=model,
        tools=[add],
        limits=Limits(max_model_calls_per_turn=1),
        session=MemorySessionStore().session("s"),
    )
    stopped = await agent.run("1 + 2?")
    assert stopped.status == "incomplete"
    assert stopped.turn.counters == flat(stopped.turn)
    continued = await agent.run(continue_turn=True)
    assert continued.status == "completed"
    counters = continued.turn.counters
    assert counters == flat(continued.turn)
    assert counters.budget_start == stopped.turn.model_calls
    assert counters.budget_used == counters.model_calls - counters.budget_start == 1


def test_counters_are_a_frozen_value_of_the_fields() -> None:
    turn = Turn(id="turn_x", status="completed", model_calls=3, iterations=4, budget_start=1)
    assert turn.counters == TurnCounters(model_calls=3, iterations=4, budget_start=1)
    assert "counters" not in Turn.from_json(turn.to_json()).to_dict()
    with pytest.raises(dataclasses.FrozenInstanceError):
        turn.counters.model_calls = 5  # type: ignore[misc]


def test_an_old_record_counts_at_least_its_model_calls_as_iterations() -> None:
    """A record written before iterations were counted reads them as its model calls."""
    turn = Turn(id="turn_x", status="completed", model_calls=2)
    assert turn.counters.iterations == 2
