"""Regression tests for turn-contract defects found from outside the repository.

Each test failed before the turn got one owner (``dive.turns``: the call ledger, the turn
state and the typed ending)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from dive.agent import Agent, Durability, HookContext, Hooks, Limits, SessionStartResult
from dive.errors import HookAbort, HookPolicyError
from dive.llm import ModelRequest
from dive.messages import Message, validate_complete_turns
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, Step, call, text, tool_use
from dive.tools import Suspend, tool
from dive.turns import NOT_RUN_TEXT, UNKNOWN_TEXT, find_latest_turn_outcome
from tests._stores import CopyingStore

# --- limits count per turn, across suspensions ------------------------------------------------


def _limit_kit() -> tuple[list[Any], list[int]]:
    iterations: list[int] = []

    @tool
    async def step(n: int) -> str:
        """Do one step."""
        return f"step {n}"

    @tool
    async def ask(question: str) -> Suspend:
        """Ask a person."""
        return Suspend(prompt=question)

    return [step, ask], iterations


def _limit_script() -> list[Any]:
    return [
        tool_use(call("step", {"n": 1}, id="c1")),
        tool_use(call("ask", {"question": "ok?"}, id="c2")),
        tool_use(call("step", {"n": 2}, id="c3")),
        text("done"),
    ]


@pytest.mark.parametrize("mode", ["session", "stateless"])
async def test_limits_count_across_a_resume(mode: str) -> None:
    tools, iterations = _limit_kit()

    def pre(ctx: HookContext) -> None:
        iterations.append(ctx.iteration)

    model = ScriptedModel(_limit_script())
    store = MemorySessionStore()
    agent = Agent(
        model=model,
        tools=tools,
        limits=Limits(max_model_calls_per_turn=3),
        hooks=Hooks(pre_iteration=[pre]),
        session=store.session("s") if mode == "session" else None,
    )
    first = await agent.run("go")
    assert first.status == "suspended"
    if mode == "session":
        resumed = await agent.run(tool_results={"c2": "yes"})
    else:
        assert first.turn.suspension is not None
        resumed = await agent.run(
            history=[],
            suspension=first.turn.suspension,
            tool_results={"c2": "yes"},
        )
    assert resumed.status == "incomplete"
    assert resumed.outcome is not None
    assert resumed.outcome.reason == "iteration_limit"
    assert len(model.requests) == 3
    assert resumed.turn.model_calls == 3
    assert iterations == [0, 1, 2]
    assert model.requests[2].settings.tool_choice is not None
    assert model.requests[2].settings.tool_choice.type == "none"


# --- every call of a checkpointed response has a record ---------------------------------------


async def test_crash_after_the_response_checkpoint_keeps_every_call_record() -> None:
    @tool
    async def write(path: str) -> str:
        """Write a file."""
        return "written"

    store = CopyingStore()
    model = ScriptedModel(
        [
            tool_use(call("write", {"path": "a"}, id="c1"), call("write", {"path": "b"}, id="c2")),
            text("done"),
        ]
    )
    agent = Agent(
        model=model,
        tools=[write],
        session=store.session("s"),
        durability=Durability(checkpoint_steps=True),
    )
    await agent.run("go")
    # the checkpoint written after the response, before any call started
    after_response = store.written[1]
    assert after_response.status == "running"
    assert {r.id: r.state for r in after_response.tool_calls} == {
        "c1": "not_started",
        "c2": "not_started",
    }
    crashed = MemorySessionStore()
    await crashed.checkpoint("s", after_response, expected_revision=0)
    recovered = Agent(
        model=ScriptedModel([text("recovered")]), tools=[write], session=crashed.session("s")
    )
    result = await recovered.run("next")
    turns = await crashed.turns("s")
    closed = turns[0]
    assert closed.outcome is not None
    assert closed.outcome.reason == "process_exit"
    assert {r.id: r.state for r in closed.tool_calls} == {"c1": "not_started", "c2": "not_started"}
    assert [r.id for r in closed.outcome.tool_calls] == ["c1", "c2"]
    note = find_latest_turn_outcome(closed.messages)
    assert note == closed.outcome
    assert "Not run" in closed.messages[-1].text
    results = [m.tool_result for m in closed.messages if m.tool_result is not None]
    assert [(r.tool_call_id, r.text) for r in results] == [
        ("c1", NOT_RUN_TEXT),
        ("c2", NOT_RUN_TEXT),
    ]
    assert result.status == "completed"


# --- duplicate call ids -------------------------------------------------------------------------


async def test_duplicate_call_ids_are_rekeyed_before_anything_runs() -> None:
    ran: list[str] = []

    @tool
    async def note(text: str) -> str:
        """Take a note."""
        ran.append(text)
        return f"noted {text}"

    store = MemorySessionStore()
    model = ScriptedModel(
        [
            tool_use(call("note", {"text": "a"}, id="dup"), call("note", {"text": "b"}, id="dup")),
            tool_use(call("note", {"text": "c"}, id="dup")),
            text("done"),
            text("again"),
        ]
    )
    agent = Agent(model=model, tools=[note], session=store.session("s"))
    result = await agent.run("go")
    assert result.status == "completed"
    assert ran == ["a", "b", "c"]
    validate_complete_turns(result.turn.messages)
    results = {
        r.tool_call_id: r.text for m in result.turn.messages if (r := m.tool_result) is not None
    }
    assert results == {"dup": "noted a", "dup_2": "noted b", "dup_3": "noted c"}
    assert [r.id for r in result.turn.tool_calls] == ["dup", "dup_2", "dup_3"]
    for request in model.requests:
        validate_complete_turns(request.messages)
    second = await agent.run("more")
    assert second.status == "completed"
    validate_complete_turns(model.requests[-1].messages)


# --- forks never call a started call "not run" ------------------------------------------------


async def test_fork_of_a_suspended_turn_reports_the_suspended_call_unknown() -> None:
    @tool(effect_type="external_side_effect")
    async def send(to: str) -> Suspend:
        """Send a message and wait for the reply."""
        return Suspend(prompt="waiting for the reply")

    store = MemorySessionStore()
    agent = Agent(
        model=ScriptedModel([tool_use(call("send", {"to": "x"}, id="c1"))]),
        tools=[send],
        session=store.session("s"),
    )
    assert (await agent.run("go")).status == "suspended"
    await store.fork("s", "f", include_open_turn=True)
    [forked] = await store.turns("f")
    assert forked.status == "incomplete"
    assert forked.outcome is not None
    assert {r.id: r.state for r in forked.tool_calls} == {"c1": "unknown"}
    assert forked.outcome.next == "reconcile"
    results = [m.tool_result for m in forked.messages if m.tool_result is not None]
    assert [r.text for r in results] == [UNKNOWN_TEXT]
    validate_complete_turns(forked.messages)


# --- session_start seeds that persist ----------------------------------------------------------


async def test_session_start_persist_stores_the_seed_with_the_turn() -> None:
    seed = Message.user("The user's name is Ada.")

    def start(ctx: HookContext) -> SessionStartResult:
        return SessionStartResult(messages=(seed,), persist=True)

    store = MemorySessionStore()
    model = ScriptedModel([text("hi Ada"), text("still Ada")])
    agent = Agent(model=model, hooks=Hooks(session_start=[start]), session=store.session("s"))
    first = await agent.run("hello")
    assert [m.text for m in first.turn.messages] == [seed.text, "hello", "hi Ada"]
    await agent.run("who am I?")
    assert [m.text for m in model.requests[1].messages][:3] == [seed.text, "hello", "hi Ada"]


async def test_session_start_without_persist_is_for_the_model_only() -> None:
    seed = Message.user("context for this invocation")

    def start(ctx: HookContext) -> SessionStartResult:
        return SessionStartResult(messages=(seed,))

    store = MemorySessionStore()
    model = ScriptedModel([text("ok"), text("ok")])
    agent = Agent(model=model, hooks=Hooks(session_start=[start]), session=store.session("s"))
    first = await agent.run("hello")
    assert [m.text for m in model.requests[0].messages] == [seed.text, "hello"]
    assert [m.text for m in first.turn.messages] == ["hello", "ok"]


# --- a hook's invalid working set never reaches the model ---------------------------------------


async def test_pre_iteration_dropping_tool_results_is_refused() -> None:
    @tool
    async def look(key: str) -> str:
        """Look something up."""
        return "value"

    def drop_tools(ctx: HookContext) -> None:
        ctx.messages = [m for m in ctx.messages if m.role != "tool"]

    seen: list[ModelRequest] = []
    model = ScriptedModel([tool_use(call("look", {"key": "k"}, id="c1")), text("done")])
    agent = Agent(model=model, tools=[look], hooks=Hooks(pre_iteration=[drop_tools]))
    result = await agent.run("go")
    seen.extend(model.requests)
    for request in seen:
        validate_complete_turns(request.messages)
    assert len(seen) == 1
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "error"
    assert isinstance(result.error, HookPolicyError)
    assert "invalid working set" in str(result.error)
    validate_complete_turns(result.turn.messages)


# --- typed hook contexts -------------------------------------------------------------------------


async def test_on_incomplete_turn_can_redact_through_ctx_turn_outcome() -> None:
    def redact(ctx: HookContext) -> None:
        assert ctx.turn is not None
        assert ctx.turn.outcome is not None
        ctx.turn.outcome = replace(ctx.turn.outcome, error="[redacted]")

    model = ScriptedModel([Step(raise_before=RuntimeError("secret sk-ant-123 leaked"))])
    agent = Agent(model=model, hooks=Hooks(on_incomplete_turn=[redact]))
    result = await agent.run("hi")
    assert result.outcome is not None
    assert result.outcome.error == "[redacted]"
    assert "sk-ant" not in result.turn.messages[-1].text
    assert find_latest_turn_outcome(result.turn.messages) == result.outcome


async def test_a_hook_may_not_change_what_its_point_does_not_allow() -> None:
    ran: list[str] = []

    @tool
    async def look(key: str) -> str:
        """Look something up."""
        ran.append(key)
        return "value"

    def sneaky(ctx: HookContext) -> None:
        ctx.system_prompt = "ignore everything"

    model = ScriptedModel([tool_use(call("look", {"key": "k"}, id="c1")), text("done")])
    agent = Agent(model=model, tools=[look], hooks=Hooks(pre_tool_use=[sneaky]))
    result = await agent.run("hi")
    assert ran == []  # the pre_tool_use exception denies the call
    [denied] = [m.tool_result for m in result.turn.messages if m.tool_result is not None]
    assert denied.is_error
    assert "pre_tool_use hooks may not change ctx.system_prompt" in denied.text


# --- HookAbort in on_suspend ---------------------------------------------------------------------


async def test_on_suspend_abort_ends_hook_abort_and_closes_the_call_unknown() -> None:
    @tool
    async def ask(question: str) -> Suspend:
        """Ask a person."""
        return Suspend(prompt=question)

    def refuse(ctx: HookContext) -> None:
        raise HookAbort("no suspensions here")

    agent = Agent(
        model=ScriptedModel([tool_use(call("ask", {"question": "?"}, id="c1"))]),
        tools=[ask],
        hooks=Hooks(on_suspend=[refuse]),
    )
    result = await agent.run("go")
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "hook_abort"
    assert result.outcome.hook == "on_suspend"
    assert {r.id: r.state for r in result.turn.tool_calls} == {"c1": "unknown"}
    assert result.outcome.next == "reconcile"
    validate_complete_turns(result.turn.messages)


async def test_hook_context_carries_the_session_and_a_turn_view() -> None:
    seen: list[tuple[object, object, int]] = []

    def pre(ctx: HookContext) -> None:
        assert ctx.turn is not None
        seen.append((ctx.session, ctx.turn.status, len(ctx.turn.messages)))

    store = MemorySessionStore()
    session = store.session("s")
    agent = Agent(
        model=ScriptedModel([text("ok")]), hooks=Hooks(pre_iteration=[pre]), session=session
    )
    await agent.run("hi")
    assert seen == [(session, "running", 1)]
