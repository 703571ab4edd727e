"""Property test of the turn contract.

Random scripts of model responses (text, tool calls, parallel calls, truncated tool_use, every
stop reason, provider faults, cut streams), tool behaviours (ok, raise, slow) and interruptions
(hard cancel, soft cancel, deadline at random points). After every run:

- the returned and the saved history pass ``validate_complete_turns``;
- exactly one ``turn_ended``, delivered last; every ``tool_call`` has exactly one
  ``tool_call_result``;
- a call whose tool started is never answered "Not run"; soft cancel never yields "unknown";
- the session can be continued to a completed turn without re-running any tool;
- a suspended turn resumed (possibly several times) never makes more model calls than its
  limit allows, counted across the suspensions;
- responses may repeat call ids (inside a response or across the turn): history stays valid;
- with step checkpoints, a crash right after any checkpoint is recovered with a record for
  every call of every recorded response, and no call the record saw start is "Not run";
- a fork of the open turn is valid, and never reports a started call "Not run".
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

from hypothesis import given
from hypothesis import strategies as st

from dive.agent import (
    Agent,
    AgentEvent,
    Durability,
    Limits,
    Runner,
    RunResult,
    ToolCallEvent,
    ToolCallResultEvent,
    TurnEndedEvent,
)
from dive.llm import ModelResponse
from dive.messages import Message, TextBlock, ToolCall, validate_complete_turns
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, ScriptItem, Step, text
from dive.tools import Suspend, ToolContext, tool
from dive.turns import NOT_RUN_TEXT, CancelToken, Turn, recover_running_turn
from tests._stores import CopyingStore

STOP_REASONS = [
    "tool_use",
    "end_turn",
    "max_tokens",
    "model_context_window_exceeded",
    "refusal",
    "error",
    "pause_turn",
    "something_new",
]


@dataclass
class World:
    started: set[str] = field(default_factory=set[str])
    finished: set[str] = field(default_factory=set[str])
    runs: int = 0


@st.composite
def calls(draw: st.DrawFn, prefix: str) -> list[ToolCall]:
    n = draw(st.integers(1, 3))
    out: list[ToolCall] = []
    for i in range(n):
        mode = draw(st.sampled_from(["ok", "ok", "raise", "slow", "suspend"]))
        repeat = draw(st.sampled_from(["", "", "", "dup"]))  # a repeated id, in or across responses
        out.append(
            ToolCall(
                id=repeat or f"{prefix}_{i}",
                name="work",
                arguments={"mode": mode, "ms": draw(st.integers(0, 4))},
            )
        )
    if draw(st.booleans()) and draw(st.booleans()):
        out.append(
            ToolCall(id=f"{prefix}_t", name="work", arguments={}, raw_arguments='{"mode": "o')
        )
    return out


@st.composite
def script_item(draw: st.DrawFn, index: int) -> ScriptItem:
    kind = draw(st.sampled_from(["text", "calls", "calls", "calls", "raise", "cut"]))
    delay = draw(st.sampled_from([0.0, 0.0, 0.002, 0.01]))
    if kind == "text":
        reason = draw(
            st.sampled_from(["end_turn", "stop_sequence", "refusal", "max_tokens", "odd"])
        )
        return Step(response=text(f"answer {index}", stop_reason=reason), delay=delay)
    if kind == "raise":
        return Step(raise_before=RuntimeError("provider down"), delay=delay)
    blocks = draw(calls(f"c{index}"))
    reason = draw(st.sampled_from(STOP_REASONS))
    response = ModelResponse(content=(TextBlock(text="working"), *blocks), stop_reason=reason)
    if kind == "cut":
        return Step(response=response, cut_after=draw(st.integers(1, 8)), delay=delay)
    return Step(response=response, delay=delay)


@dataclass(frozen=True)
class Case:
    items: list[ScriptItem]
    interruption: str
    when: float
    parallel: bool
    durable: bool
    crash_at: int


@st.composite
def scenarios(draw: st.DrawFn) -> Case:
    n = draw(st.integers(1, 5))
    return Case(
        items=[draw(script_item(i)) for i in range(n)],
        interruption=draw(st.sampled_from(["none", "none", "cancel", "soft", "deadline"])),
        when=draw(st.sampled_from([0.0, 0.001, 0.003, 0.006, 0.012])),
        parallel=draw(st.booleans()),
        durable=draw(st.booleans()),
        crash_at=draw(st.integers(0, 40)),
    )


def make_agent(
    world: World, model: ScriptedModel, store: MemorySessionStore, **kw: object
) -> Agent:
    @tool
    async def work(ctx: ToolContext, mode: str = "ok", ms: int = 0) -> str:
        """Do some work."""
        world.started.add(ctx.tool_call_id)
        world.runs += 1
        if mode == "slow":
            await asyncio.sleep(ms / 1000 + 0.002)
        if mode == "raise":
            raise RuntimeError("tool failed")
        if mode == "suspend":
            return Suspend(prompt="need input")  # type: ignore[return-value]
        world.finished.add(ctx.tool_call_id)
        return f"done {ctx.tool_call_id}"

    return Agent(
        model=model,
        tools=[work],
        session=store.session("prop"),
        limits=Limits(max_model_calls_per_turn=4, response_timeout=None),
        **kw,  # type: ignore[arg-type]
    )


def check_events(events: list[AgentEvent]) -> None:
    ended = [i for i, e in enumerate(events) if isinstance(e, TurnEndedEvent)]
    assert ended == [len(events) - 1], "exactly one turn_ended, delivered last"
    calls_seen = Counter(e.call.id for e in events if isinstance(e, ToolCallEvent))
    results = Counter(e.call.id for e in events if isinstance(e, ToolCallResultEvent))
    assert calls_seen == results, (calls_seen, results)


def check_started_never_not_run(messages: tuple[Message, ...], started: set[str]) -> None:
    for m in messages:
        r = m.tool_result
        if r is not None and r.tool_call_id in started:
            assert r.text != NOT_RUN_TEXT, f"started call {r.tool_call_id} reported Not run"


async def check_crash(written: list[Turn], crash_at: int, runner: Runner | None = None) -> None:
    """Recover from a crash right after one of the running checkpoints."""
    running = [t for t in written if t.status == "running"]
    if not running:
        return
    snapshot = running[crash_at % len(running)]
    crashed = MemorySessionStore()
    await crashed.checkpoint("c", snapshot, expected_revision=0)
    agent = make_agent(World(), ScriptedModel([text("recovered")]), crashed)
    recovered = await agent.run(continue_turn=True, session=crashed.session("c"), runner=runner)
    assert recovered.status == "completed"
    closed = recover_running_turn(snapshot)
    assert closed.status == "incomplete"
    recorded = {r.id for r in closed.tool_calls}
    for m in closed.messages:
        for c in m.tool_calls:
            assert c.id in recorded, f"call {c.id} of a recorded response has no record"
    seen_start = {r.id for r in snapshot.tool_calls if r.state != "not_started"}
    check_started_never_not_run(closed.messages, seen_start)
    validate_complete_turns(closed.messages)
    validate_complete_turns(recovered.turn.messages)


async def resume_until_done(
    agent: Agent, result: RunResult[str], model: ScriptedModel, runner: Runner | None = None
) -> RunResult[str]:
    for _ in range(4):
        if result.status != "suspended":
            break
        assert result.turn.suspension is not None
        answers = {p.id: "answer" for p in result.turn.suspension.pending_tool_calls}
        result = await agent.run(tool_results=answers, runner=runner)
        assert result.turn.model_calls <= 4, "the model-call limit counts across suspensions"
        assert len(model.requests) <= 4
    return result


async def scenario(case: Case, runner: Runner | None = None) -> None:
    """One random script; ``runner`` carries every effect (default: in process)."""
    items, interruption, when = case.items, case.interruption, case.when
    world = World()
    store = CopyingStore()
    model = ScriptedModel(items)
    agent = make_agent(
        world,
        model,
        store,
        parallel_tool_execution=case.parallel,
        durability=Durability(checkpoint_steps=case.durable),
    )
    if interruption == "deadline":
        agent.limits = Limits(max_model_calls_per_turn=4, response_timeout=max(when, 0.0005))
    token = CancelToken()
    loop = asyncio.get_running_loop()
    if interruption == "cancel":
        loop.call_later(when, token.cancel)
    elif interruption == "soft":
        loop.call_later(when, token.soft_cancel)
    events: list[AgentEvent] = []
    result = await agent.run("start", cancel=token, on_event=events.append, runner=runner)
    check_events(events)
    if result.status != "suspended":  # a suspended turn waits for its pending results
        validate_complete_turns(result.turn.messages)
        validate_complete_turns(await store.session("prop").messages())
    check_started_never_not_run(result.turn.messages, world.started)
    if interruption == "soft":
        assert all(c.state != "unknown" for c in result.turn.tool_calls), "soft cancel → unknown"
    if result.status == "incomplete":
        assert result.outcome is not None
        assert result.turn.messages[-1].metadata.get("dive.reminder") == "turn-incomplete"

    await store.fork("prop", "fork", include_open_turn=True)
    forked = await store.session("fork").messages()
    validate_complete_turns(forked)
    check_started_never_not_run(tuple(forked), world.started)
    if case.durable:
        await check_crash(list(store.written), case.crash_at, runner)

    result = await resume_until_done(agent, result, model, runner)
    if result.status == "suspended":
        await agent.cancel_suspended_turn(runner=runner)
    validate_complete_turns(await store.session("prop").messages())
    # Continue to a completed turn; no tool runs again.
    runs_before = world.runs
    agent.model = ScriptedModel([text("all done")])
    agent.limits = Limits(max_model_calls_per_turn=4, response_timeout=None)
    events2: list[AgentEvent] = []
    again = await agent.run(continue_turn=True, on_event=events2.append, runner=runner)
    assert again.status == "completed", again.outcome
    assert world.runs == runs_before
    check_events(events2)
    validate_complete_turns(await store.session("prop").messages())


@given(scenarios())
def test_turn_contract_holds_for_random_scripts(case: Case) -> None:
    asyncio.run(scenario(case))
