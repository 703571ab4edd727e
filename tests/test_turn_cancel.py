"""Cancellation (turns.md §2, §5, §7, §9, §17 "Hard cancel of a parallel batch", §19).

Hard cancel by token and by cancelling the calling task, soft cancel at step boundaries, a
hard-cancelled parallel batch with background handles and their later delivery, and the event
rules (one ``turn_ended``, every ``tool_call`` answered) under all of them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dive.agent import (
    Agent,
    BackgroundTaskHandle,
    HookContext,
    Hooks,
    ToolCallResultEvent,
    TurnEndedEvent,
    await_background_tasks,
)
from dive.errors import RunCanceledError, SoftCanceled
from dive.messages import validate_complete_turns
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, Step, call, text, tool_use
from dive.tools import ToolContext, tool
from dive.turns import NOT_RUN_TEXT, UNKNOWN_TEXT, CancelToken, find_reminder
from tests.test_turn_contract import (
    Collector,
    Counter,
    answers,
    check_incomplete,
    make_add,
    wait_for,
)

# --- hard cancel ------------------------------------------------------------------------------


async def test_soft_cancel_during_model_call_stops_before_tools() -> None:
    counter = Counter()
    step = Step(response=tool_use(call("add", {"a": 1, "b": 2}, id="c1")), delay=0.05)
    model = ScriptedModel([step])
    agent = Agent(model=model, tools=[make_add(counter)])
    token = CancelToken()
    task = asyncio.create_task(agent.run("hi", cancel=token))
    await wait_for(lambda: bool(model.requests))
    token.soft_cancel()
    result = await task
    outcome = check_incomplete(result, "canceled", next="input", error=True)
    assert isinstance(result.error, SoftCanceled)
    assert counter.calls == []
    assert answers(result.turn.messages) == [("c1", NOT_RUN_TEXT, True)]
    assert [c.state for c in outcome.tool_calls] == ["not_started"]


async def test_token_cancel_error_is_run_canceled() -> None:
    model = ScriptedModel([Step(response=text("late"), delay=1.0)])
    token = CancelToken()
    task = asyncio.create_task(Agent(model=model).run("hi", cancel=token))
    await wait_for(lambda: bool(model.requests))
    token.cancel()
    result = await task
    check_incomplete(result, "canceled", next="input", error=True)
    assert isinstance(result.error, RunCanceledError)
    assert not isinstance(result.error, SoftCanceled)


async def test_calling_task_cancel_saves_emits_then_reraises() -> None:
    store = MemorySessionStore()
    session = store.session("s1")
    model = ScriptedModel([Step(response=text("late"), delay=1.0)])
    stored_at_turn_ended: list[int] = []
    collector = Collector()

    async def handler(event: Any) -> None:
        await collector(event)
        if isinstance(event, TurnEndedEvent):
            stored_at_turn_ended.append(len(await session.turns()))

    task = asyncio.create_task(Agent(model=model).run("hi", session=session, on_event=handler))
    await wait_for(lambda: bool(model.requests))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    collector.check_contract()
    assert stored_at_turn_ended == [1]  # saved before turn_ended
    ended = collector.events[-1]
    assert isinstance(ended, TurnEndedEvent)
    turns = await session.turns()
    assert len(turns) == 1
    turn = turns[0]
    assert turn.id == ended.turn.id
    assert turn.status == "incomplete"
    assert turn.outcome is not None
    assert turn.outcome.reason == "canceled"
    assert turn.outcome.next == "input"
    assert turn.outcome.error
    validate_complete_turns(turn.messages)
    assert ended.turn.persistence == "saved"


async def test_calling_task_cancel_during_tool_records_unknown() -> None:
    store = MemorySessionStore()
    session = store.session("s1")
    started = asyncio.Event()

    @tool
    async def deploy() -> str:
        """Deploys slowly."""
        started.set()
        await asyncio.sleep(5)
        return "deployed"

    model = ScriptedModel([tool_use(call("deploy", id="c1"))])
    collector = Collector()
    agent = Agent(model=model, tools=[deploy])
    task = asyncio.create_task(agent.run("ship it", session=session, on_event=collector))
    await asyncio.wait_for(started.wait(), 1.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    collector.check_contract()
    (turn,) = await session.turns()
    assert turn.outcome is not None
    assert turn.outcome.reason == "canceled"
    assert turn.outcome.next == "reconcile"
    assert [(c.id, c.state, c.reconcile) for c in turn.tool_calls] == [("c1", "unknown", True)]
    validate_complete_turns(turn.messages)
    assert answers(turn.messages) == [("c1", UNKNOWN_TEXT, True)]


# --- hard cancel of a parallel batch ----------------------------------------------------------


async def test_parallel_hard_cancel_states_handles_and_background_delivery() -> None:
    """4 calls under max_tool_concurrency=2: fast finished, two running, one never started.

    (With 3 calls and a cap of 2 the slot the fast call frees starts the third, so the
    "not started" call needs both slots held by running calls.)
    """
    a_started = asyncio.Event()
    b_started = asyncio.Event()
    ran: list[str] = []

    @tool
    async def fast() -> str:
        """Returns at once."""
        ran.append("fast")
        return "fast result"

    @tool
    async def slow_a() -> str:
        """Finishes late: it catches the cancellation and still returns."""
        ran.append("slow_a")
        a_started.set()
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "slow a finished late"
        return "never"

    @tool
    async def slow_b() -> str:
        """Lets the cancellation propagate."""
        ran.append("slow_b")
        b_started.set()
        await asyncio.sleep(5)
        return "never"

    @tool
    async def late() -> str:
        """Must never start."""
        ran.append("late")
        return "late"

    post_hooks: list[str] = []
    delivered: list[tuple[str, str]] = []

    def post(ctx: HookContext) -> None:
        assert ctx.call is not None
        post_hooks.append(ctx.call.id)

    def on_background(ctx: HookContext) -> None:
        assert ctx.call is not None
        assert ctx.tool_result is not None
        delivered.append((ctx.call.id, ctx.tool_result.text))

    response = tool_use(
        call("fast", id="c_fast"),
        call("slow_a", id="c_a"),
        call("slow_b", id="c_b"),
        call("late", id="c_late"),
    )
    model = ScriptedModel([response])
    agent = Agent(
        model=model,
        tools=[fast, slow_a, slow_b, late],
        parallel_tool_execution=True,
        max_tool_concurrency=2,
        hooks=Hooks(post_tool_use=[post], post_background_tool_use=[on_background]),
    )
    store = MemorySessionStore()
    session = store.session("s1")
    token = CancelToken()
    collector = Collector()
    task = asyncio.create_task(agent.run("go", session=session, cancel=token, on_event=collector))

    def fast_answered() -> bool:
        return any(
            isinstance(e, ToolCallResultEvent) and e.call.id == "c_fast" for e in collector.events
        )

    await wait_for(lambda: a_started.is_set() and b_started.is_set() and fast_answered())
    token.cancel()
    result = await task

    outcome = check_incomplete(result, "canceled", next="reconcile", error=True)
    assert sorted(ran) == ["fast", "slow_a", "slow_b"]
    assert post_hooks == ["c_fast"]
    assert answers(result.turn.messages) == [
        ("c_fast", "fast result", False),
        ("c_a", UNKNOWN_TEXT, True),
        ("c_b", UNKNOWN_TEXT, True),
        ("c_late", NOT_RUN_TEXT, True),
    ]
    assert [(c.id, c.state) for c in outcome.tool_calls] == [
        ("c_fast", "completed"),
        ("c_a", "unknown"),
        ("c_b", "unknown"),
        ("c_late", "not_started"),
    ]
    assert result.persistence == "saved"

    # every tool_call has exactly one tool_call_result, not-run and unknown calls included
    collector.check_contract()
    states = {e.call.id: e.state for e in collector.events if isinstance(e, ToolCallResultEvent)}
    assert states == {
        "c_fast": "completed",
        "c_a": "unknown",
        "c_b": "unknown",
        "c_late": "not_started",
    }

    handles = result.background_tasks
    assert all(isinstance(h, BackgroundTaskHandle) for h in handles)
    typed: list[BackgroundTaskHandle] = [h for h in handles if isinstance(h, BackgroundTaskHandle)]
    assert sorted(h.tool_call_id for h in typed) == ["c_a", "c_b"]
    assert {h.turn_id for h in typed} == {result.turn.id}
    by_id = {h.tool_call_id: h for h in typed}
    assert by_id["c_a"].description == "slow_a call still running when its turn ended"
    late_results = await await_background_tasks(typed, wait_at_most=1.0)
    assert len(late_results) == 2
    assert all(h.done.done() for h in typed)
    found = {r.tool_call_id: r for r in late_results}
    assert found["c_b"].result.is_error  # cancelled: an error result
    assert {r.turn_id for r in late_results} == {result.turn.id}

    # deliver the late results: a new turn with origin "background"
    model.add(text("noted"))
    second = await agent.run(background_results=late_results, session=session)
    assert second.status == "completed"
    assert second.turn.id != result.turn.id
    assert second.turn.origin.kind == "background"
    assert second.turn.origin.turn_id == result.turn.id
    first_message = second.turn.messages[0]
    reminder = find_reminder([first_message], "background-tasks")
    assert reminder is not None
    assert "c_a" in reminder.content
    assert "c_b" in reminder.content
    assert sorted(delivered) == sorted((r.tool_call_id, r.result.text) for r in late_results)
    turns = await session.turns()
    assert [t.id for t in turns] == [result.turn.id, second.turn.id]
    assert turns[0].superseded


async def test_parallel_hard_cancel_three_calls_one_slot() -> None:
    started = asyncio.Event()
    ran: list[str] = []

    @tool
    async def fast() -> str:
        """Returns at once."""
        ran.append("fast")
        return "fast result"

    @tool
    async def slow() -> str:
        """Runs until cancelled."""
        ran.append("slow")
        started.set()
        await asyncio.sleep(5)
        return "never"

    @tool
    async def late() -> str:
        """Must never start."""
        ran.append("late")
        return "late"

    model = ScriptedModel(
        [tool_use(call("fast", id="c1"), call("slow", id="c2"), call("late", id="c3"))]
    )
    agent = Agent(
        model=model,
        tools=[fast, slow, late],
        parallel_tool_execution=True,
        max_tool_concurrency=1,
    )
    token = CancelToken()
    collector = Collector()
    task = asyncio.create_task(agent.run("go", cancel=token, on_event=collector))
    await asyncio.wait_for(started.wait(), 1.0)
    token.cancel()
    result = await task
    outcome = check_incomplete(result, "canceled", next="reconcile", error=True)
    assert ran == ["fast", "slow"]
    assert [(c.id, c.state) for c in outcome.tool_calls] == [
        ("c1", "completed"),
        ("c2", "unknown"),
        ("c3", "not_started"),
    ]
    assert answers(result.turn.messages) == [
        ("c1", "fast result", False),
        ("c2", UNKNOWN_TEXT, True),
        ("c3", NOT_RUN_TEXT, True),
    ]
    assert len(result.background_tasks) == 1
    collector.check_contract()
    done = await await_background_tasks(list(result.background_tasks), wait_at_most=1.0)
    assert [r.tool_call_id for r in done] == ["c2"]
    assert done[0].result.is_error


async def test_parallel_hard_cancel_keeps_result_already_in() -> None:
    """§17: results already in are kept (without post hooks).

    Call a's post hook holds the drain; meanwhile call b finishes. On hard cancel b's result is
    in (its task is done), so it must be kept ``completed``, not reported ``unknown`` with no
    background handle to recover it.
    """
    in_hook = asyncio.Event()
    b_done = asyncio.Event()

    @tool
    async def first() -> str:
        """Returns at once."""
        return "first result"

    @tool
    async def second() -> str:
        """Returns once the first call's post hook is running."""
        await in_hook.wait()
        b_done.set()
        return "second result"

    async def post(ctx: HookContext) -> None:
        assert ctx.call is not None
        if ctx.call.id == "c1":
            in_hook.set()
            await asyncio.sleep(5)

    model = ScriptedModel([tool_use(call("first", id="c1"), call("second", id="c2"))])
    agent = Agent(
        model=model,
        tools=[first, second],
        parallel_tool_execution=True,
        hooks=Hooks(post_tool_use=[post]),
    )
    token = CancelToken()
    task = asyncio.create_task(agent.run("go", cancel=token))
    await asyncio.wait_for(b_done.wait(), 1.0)
    await asyncio.sleep(0.01)  # let the second call's task finish
    token.cancel()
    result = await task
    assert result.status == "incomplete"
    outcome = result.outcome
    assert outcome is not None
    assert outcome.reason == "canceled"
    validate_complete_turns(result.turn.messages)
    states = {c.id: c.state for c in outcome.tool_calls}
    assert states["c2"] == "completed"
    assert ("c2", "second result", False) in answers(result.turn.messages)


# --- soft cancel ------------------------------------------------------------------------------


async def test_soft_cancel_lets_running_sequential_call_finish() -> None:
    started = asyncio.Event()
    seen: list[bool] = []
    counter = Counter()

    @tool
    async def wind_down(ctx: ToolContext) -> str:
        """Polls for a soft cancel and winds down."""
        seen.append(ctx.soft_cancel_requested)
        started.set()
        for _ in range(1000):
            if ctx.soft_cancel_requested:
                break
            await asyncio.sleep(0.002)
        seen.append(ctx.soft_cancel_requested)
        return "wound down"

    model = ScriptedModel(
        [tool_use(call("wind_down", id="c1"), call("add", {"a": 1, "b": 2}, id="c2"))]
    )
    agent = Agent(model=model, tools=[wind_down, make_add(counter)], parallel_tool_execution=False)
    token = CancelToken()
    collector = Collector()
    task = asyncio.create_task(agent.run("go", cancel=token, on_event=collector))
    await asyncio.wait_for(started.wait(), 1.0)
    token.soft_cancel()
    result = await task

    outcome = check_incomplete(result, "canceled", next="input", error=True)
    assert isinstance(result.error, SoftCanceled)
    assert seen == [False, True]
    assert counter.calls == []
    assert answers(result.turn.messages) == [
        ("c1", "wound down", False),
        ("c2", NOT_RUN_TEXT, True),
    ]
    assert [(c.id, c.state) for c in outcome.tool_calls] == [
        ("c1", "completed"),
        ("c2", "not_started"),
    ]
    assert all(c.state != "unknown" for c in result.turn.tool_calls)
    assert result.background_tasks == ()
    collector.check_contract()


async def test_soft_cancel_parallel_never_unknown() -> None:
    both_started = asyncio.Event()
    running: list[str] = []
    ran: list[str] = []

    async def poll(ctx: ToolContext, name: str) -> str:
        running.append(name)
        if len(running) == 2:
            both_started.set()
        for _ in range(1000):
            if ctx.soft_cancel_requested:
                break
            await asyncio.sleep(0.002)
        return f"{name} stopped"

    @tool
    async def one(ctx: ToolContext) -> str:
        """Polls."""
        return await poll(ctx, "one")

    @tool
    async def two(ctx: ToolContext) -> str:
        """Polls."""
        return await poll(ctx, "two")

    @tool
    async def three() -> str:
        """Must never start."""
        ran.append("three")
        return "three"

    model = ScriptedModel(
        [tool_use(call("one", id="c1"), call("two", id="c2"), call("three", id="c3"))]
    )
    agent = Agent(
        model=model,
        tools=[one, two, three],
        parallel_tool_execution=True,
        max_tool_concurrency=2,
    )
    token = CancelToken()
    collector = Collector()
    task = asyncio.create_task(agent.run("go", cancel=token, on_event=collector))
    await asyncio.wait_for(both_started.wait(), 1.0)
    token.soft_cancel()
    result = await task

    outcome = check_incomplete(result, "canceled", next="input", error=True)
    assert isinstance(result.error, SoftCanceled)
    assert ran == []
    assert answers(result.turn.messages) == [
        ("c1", "one stopped", False),
        ("c2", "two stopped", False),
        ("c3", NOT_RUN_TEXT, True),
    ]
    assert [(c.id, c.state) for c in outcome.tool_calls] == [
        ("c1", "completed"),
        ("c2", "completed"),
        ("c3", "not_started"),
    ]
    assert all(c.state != "unknown" for c in result.turn.tool_calls)
    assert result.background_tasks == ()
    collector.check_contract()


# --- events: one turn_ended per invocation ----------------------------------------------------


@pytest.mark.parametrize("scenario", ["completed", "provider_error", "output_limit", "cancel"])
async def test_exactly_one_turn_ended_delivered_last(scenario: str) -> None:
    counter = Counter()
    script: list[Any]
    if scenario == "completed":
        script = [tool_use(call("add", {"a": 1, "b": 2})), text("3")]
    elif scenario == "provider_error":
        script = [tool_use(call("add", {"a": 1, "b": 2})), Step(raise_before=OSError("down"))]
    elif scenario == "output_limit":
        script = [tool_use(call("add", {"a": 1, "b": 2}), stop_reason="max_tokens")]
    else:
        script = [tool_use(call("add", {"a": 1, "b": 2})), Step(response="late", delay=1.0)]
    model = ScriptedModel(script)
    agent = Agent(model=model, tools=[make_add(counter)])
    token = CancelToken()
    collector = Collector()
    task = asyncio.create_task(agent.run("go", cancel=token, on_event=collector))
    if scenario == "cancel":
        await wait_for(lambda: len(model.requests) == 2)
        token.cancel()
    result = await task
    collector.check_contract()
    ended = collector.events[-1]
    assert isinstance(ended, TurnEndedEvent)
    assert ended.turn == result.turn
    assert not any(isinstance(e, TurnEndedEvent) for e in result.items)
    assert [e for e in collector.events[:-1] if e.type != "model_event"] == list(result.items)


async def test_background_handle_delivers_the_late_tool_result() -> None:
    """§17: the forwarder delivers whatever the task finally produces (here, a result)."""
    started = asyncio.Event()

    @tool
    async def fast() -> str:
        """Returns at once."""
        return "fast result"

    @tool
    async def stubborn() -> str:
        """Catches the cancellation and still returns its result."""
        started.set()
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            return "finished late"
        return "never"

    model = ScriptedModel([tool_use(call("fast", id="c1"), call("stubborn", id="c2"))])
    agent = Agent(model=model, tools=[fast, stubborn], parallel_tool_execution=True)
    token = CancelToken()
    task = asyncio.create_task(agent.run("go", cancel=token))
    await asyncio.wait_for(started.wait(), 1.0)
    token.cancel()
    result = await task
    check_incomplete(result, "canceled", next="reconcile", error=True)
    handles = [h for h in result.background_tasks if isinstance(h, BackgroundTaskHandle)]
    assert [h.tool_call_id for h in handles] == ["c2"]
    (late,) = await await_background_tasks(handles, wait_at_most=1.0)
    assert late.tool_call_id == "c2"
    assert late.result.text == "finished late"
    assert not late.result.is_error
