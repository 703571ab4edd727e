"""Suspend and resume (turns.md §11), the ``on_suspend`` hook (§16) and the approval gate
(messages.md §6 item 4): suspending tools, sequential and parallel batches, session-backed,
cross-process and stateless resume, idempotent re-submission, partial resume, hook order and
delivery, ``cancel_suspended_turn``, guards and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel

from dive.agent import (
    Agent,
    AgentEvent,
    ApprovalDecision,
    HookContext,
    Hooks,
    ToolApproval,
    ToolCallEvent,
    ToolCallResultEvent,
    TurnEndedEvent,
    allow,
    ask,
    deny,
)
from dive.agent._approval import DENIED_TEXT
from dive.errors import (
    ConflictingToolResultError,
    HookAbort,
    InputOnSuspendedSessionError,
    InvalidRunError,
    NoSuspendedTurnError,
    ResumeRequiredError,
    RevisionConflictError,
    SaveRejectedError,
    ToolCallNotPendingError,
    UnknownToolCallError,
)
from dive.llm import ModelRequest
from dive.messages import Message, TextBlock, ToolCall, ToolResult, validate_complete_turns
from dive.sessions import MemorySessionStore, SQLiteSessionStore
from dive.testing import ScriptedModel, ScriptItem, call, text, tool_use
from dive.tools import Background, Suspend, Tool, ToolReturn, tool
from dive.turns import NOT_RUN_TEXT, UNKNOWN_TEXT, CancelToken, SuspensionState, Turn
from tests.conftest import fresh_pg_store, postgres_dsn
from tests.suspend_child import METADATA as CHILD_METADATA

ROOT = Path(__file__).resolve().parent.parent

META: dict[str, Any] = {
    "form": {"fields": ["name", "email"], "required": True},
    "count": 2,
    "ratio": 0.5,
    "nothing": None,
    "tags": ["a", 1, False],
}


class Question(BaseModel):
    question: str


# --- helpers ----------------------------------------------------------------------------------


class Kit:
    """Tools that record what ran, in order."""

    def __init__(self, *, read_only_ask: bool = False, cancel: CancelToken | None = None) -> None:
        self.ran: list[str] = []
        ran = self.ran
        ask_options: dict[str, Any] = {"effect_type": "read_only"} if read_only_ask else {}

        @tool(**ask_options)
        async def ask_user(question: str) -> Suspend:
            """Ask the user a question and wait for the answer."""
            ran.append(f"ask_user:{question}")
            return Suspend(prompt=question, reason="input_required", metadata=META)

        @tool
        async def lookup(key: str) -> str:
            """Look a key up."""
            ran.append(f"lookup:{key}")
            return f"value of {key}"

        @tool(requires_approval=True, effect_type="write")
        async def delete_file(path: str) -> str:
            """Delete a file (needs a person's approval)."""
            ran.append(f"delete_file:{path}")
            return f"deleted {path}"

        @tool
        async def ask_soft(question: str) -> Suspend:
            """Request a soft cancel, then suspend."""
            assert cancel is not None
            cancel.soft_cancel()
            ran.append(f"ask_soft:{question}")
            return Suspend(prompt=question)

        @tool
        async def ask_hard(question: str) -> Suspend:
            """Request a hard cancel, then suspend (nothing awaited in between)."""
            assert cancel is not None
            cancel.cancel()
            ran.append(f"ask_hard:{question}")
            return Suspend(prompt=question)

        self.tools: list[Tool] = [ask_user, lookup, delete_file, ask_soft, ask_hard]


def make_agent(
    kit: Kit,
    script: Sequence[ScriptItem],
    store: MemorySessionStore | None = None,
    **kw: Any,
) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(script)
    session = store.session("s") if store is not None else None
    return Agent(model=model, tools=kit.tools, session=session, **kw), model


def ask_call(question: str, id: str) -> ToolCall:
    return call("ask_user", {"question": question}, id=id)


def look(key: str, id: str) -> ToolCall:
    return call("lookup", {"key": key}, id=id)


def results_of(messages: Sequence[Message]) -> list[ToolResult]:
    return [r for m in messages if (r := m.tool_result) is not None]


def result_for(messages: Sequence[Message], call_id: str) -> ToolResult:
    [found] = [r for r in results_of(messages) if r.tool_call_id == call_id]
    return found


def states(turn: Turn) -> dict[str, str]:
    return {rec.id: rec.state for rec in turn.tool_calls}


def pending_ids(turn: Turn) -> list[str]:
    assert turn.suspension is not None, turn.status
    return [p.id for p in turn.suspension.pending_tool_calls]


def request_results(request: ModelRequest) -> list[tuple[str, str, bool]]:
    return [(r.tool_call_id, r.text, r.is_error) for r in results_of(request.messages)]


E = TypeVar("E")


class Recorder:
    """An ``on_event`` handler keeping every event."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, kind)]


class LoggingStore(MemorySessionStore):
    """Records each checkpoint into a shared log; can refuse the next N writes."""

    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log
        self.fail_next = 0

    async def checkpoint(self, id: str, turn: Turn, *, expected_revision: int) -> int:
        if self.fail_next:
            self.fail_next -= 1
            self.log.append(f"checkpoint-refused:{turn.status}")
            raise SaveRejectedError("the store refused the write")
        self.log.append(f"checkpoint:{turn.status}")
        return await super().checkpoint(id, turn, expected_revision=expected_revision)


# --- suspending -------------------------------------------------------------------------------


async def test_a_suspending_tool_suspends_the_turn() -> None:
    kit = Kit()
    store = MemorySessionStore()
    seen: list[str] = []
    hooks = Hooks(
        pre_tool_use=[lambda ctx: seen.append(f"pre:{ctx.call.id if ctx.call else ''}")],
        post_tool_use=[lambda ctx: seen.append("post")],
        post_tool_use_failure=[lambda ctx: seen.append("post_failure")],
    )
    agent, model = make_agent(
        kit, [tool_use(ask_call("What is your name?", "c1"))], store, hooks=hooks
    )
    rec = Recorder()
    result = await agent.run("sign me up", on_event=rec)

    assert result.status == "suspended"
    assert result.error is None
    assert result.persistence == "saved"
    assert len(model.requests) == 1
    state = result.turn.suspension
    assert state is not None
    assert state.turn_id == result.turn.id
    [pending] = state.pending_tool_calls
    assert pending.id == "c1"
    assert pending.name == "ask_user"
    assert dict(pending.input) == {"question": "What is your name?"}
    assert pending.prompt == "What is your name?"
    assert pending.reason == "input_required"
    assert pending.started is True
    assert json.loads(json.dumps(dict(pending.metadata))) == META
    assert pending.input_as(Question) == Question(question="What is your name?")
    # metadata round-trips through JSON (the whole state does)
    decoded = SuspensionState.from_json(state.to_json())
    assert decoded == state
    assert dict(decoded.pending_tool_calls[0].metadata) == META
    # the stored record carries the same suspension
    snap = await store.load("s")
    assert snap.open_turn is not None
    assert snap.open_turn.status == "suspended"
    assert snap.open_turn.suspension == state
    assert states(result.turn) == {"c1": "waiting"}

    # the tool_call_result event carries the suspension; no tool message is added
    [announced] = rec.of(ToolCallEvent)
    assert announced.call.id == "c1"
    [event] = rec.of(ToolCallResultEvent)
    assert event.call.id == "c1"
    assert event.state == "waiting"
    assert event.result is None
    assert event.suspension == pending
    assert results_of(result.turn.messages) == []
    assert [m.role for m in result.turn.messages] == ["user", "assistant"]
    assert isinstance(rec.events[-1], TurnEndedEvent)
    # pre_tool_use fired; neither post hook fires for a suspension
    assert seen == ["pre:c1"]
    assert kit.ran == ["ask_user:What is your name?"]


async def test_sequential_later_calls_wait_and_run_on_resume_before_the_next_model_call() -> None:
    kit = Kit()
    store = MemorySessionStore()
    suspends: list[str] = []
    ran_at_second_call: list[str] = []

    def final(request: ModelRequest) -> Any:
        ran_at_second_call.extend(kit.ran)
        return text("done")

    agent, model = make_agent(
        kit,
        [tool_use(ask_call("Which key?", "c1"), look("k", "c2"), ask_call("Sure?", "c3")), final],
        store,
        hooks=Hooks(on_suspend=[lambda ctx: suspends.append("on_suspend")]),
        parallel_tool_execution=False,
    )
    rec = Recorder()
    first = await agent.run("go", on_event=rec)

    assert first.status == "suspended"
    assert pending_ids(first.turn) == ["c1"]
    assert kit.ran == ["ask_user:Which key?"]
    assert [e.call.id for e in rec.of(ToolCallEvent)] == ["c1"]  # c2, c3 never announced
    assert states(first.turn) == {"c1": "waiting", "c2": "not_started", "c3": "not_started"}
    assert first.turn.suspension is not None
    assert first.turn.suspension.completed_tool_calls == ()
    assert suspends == ["on_suspend"]

    # resume: c2 runs, then c3 suspends again (a new suspension: on_suspend fires again)
    second = await agent.run(tool_results={"c1": "k"})
    assert second.status == "suspended"
    assert pending_ids(second.turn) == ["c3"]
    assert len(model.requests) == 1
    assert kit.ran == ["ask_user:Which key?", "lookup:k", "ask_user:Sure?"]
    assert [e.call.id for e in second.items if isinstance(e, ToolCallEvent)] == ["c2", "c3"]
    assert suspends == ["on_suspend", "on_suspend"]
    assert second.turn.suspension is not None
    assert second.turn.suspension.completed_tool_calls == ("c1", "c2")

    third = await agent.run(tool_results={"c3": "yes"})
    assert third.status == "completed"
    assert third.output_text == "done"
    assert ran_at_second_call == kit.ran  # every call ran before the next model call
    assert request_results(model.requests[1]) == [
        ("c1", "k", False),
        ("c2", "value of k", False),
        ("c3", "yes", False),
    ]
    assert states(third.turn) == {"c1": "completed", "c2": "completed", "c3": "completed"}
    assert third.turn.id == first.turn.id
    validate_complete_turns(await store.session("s").messages())


async def test_parallel_siblings_finish_and_are_recorded() -> None:
    kit = Kit()
    store = MemorySessionStore()
    agent, model = make_agent(
        kit,
        [tool_use(look("a", "c1"), ask_call("Which?", "c2"), look("b", "c3")), text("done")],
        store,
        parallel_tool_execution=True,
    )
    first = await agent.run("go")
    assert first.status == "suspended"
    assert first.turn.suspension is not None
    assert first.turn.suspension.completed_tool_calls == ("c1", "c3")
    assert pending_ids(first.turn) == ["c2"]
    assert [r.tool_call_id for r in results_of(first.turn.messages)] == ["c1", "c3"]
    assert result_for(first.turn.messages, "c3").text == "value of b"
    assert states(first.turn) == {"c1": "completed", "c2": "waiting", "c3": "completed"}

    second = await agent.run(tool_results={"c2": "that one"})
    assert second.status == "completed"
    assert sorted(kit.ran) == ["ask_user:Which?", "lookup:a", "lookup:b"]  # nothing re-ran
    assert request_results(model.requests[1]) == [
        ("c1", "value of a", False),
        ("c2", "that one", False),
        ("c3", "value of b", False),
    ]


# --- across processes -------------------------------------------------------------------------


def run_child(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.suspend_child", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def child_json(out: str, tag: str) -> dict[str, Any]:
    [line] = [line for line in out.splitlines() if line.startswith(tag + " ")]
    data: dict[str, Any] = json.loads(line[len(tag) + 1 :])
    return data


async def load_open_turn(backend: str, target: str, session: str) -> tuple[Turn | None, int]:
    if backend == "sqlite":
        store = SQLiteSessionStore(target)
        try:
            snap = await store.load(session)
        finally:
            await store.close()
        return snap.open_turn, snap.revision
    from dive.sessions._postgres import PostgresSessionStore

    async with PostgresSessionStore(target) as pg:
        snap = await pg.load(session)
    return snap.open_turn, snap.revision


async def all_turns(backend: str, target: str, session: str) -> list[Turn]:
    if backend == "sqlite":
        store = SQLiteSessionStore(target)
        try:
            return await store.turns(session)
        finally:
            await store.close()
    from dive.sessions._postgres import PostgresSessionStore

    async with PostgresSessionStore(target) as pg:
        return await pg.turns(session)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_suspend_in_one_process_and_resume_in_another(backend: str, tmp_path: Path) -> None:
    if backend == "postgres":
        await (await fresh_pg_store()).close()
        target = postgres_dsn()
    else:
        target = str(tmp_path / "sessions.db")
    effects = tmp_path / "effects.txt"
    effects.touch()
    args = [backend, target, "cross", str(effects)]

    started = child_json(run_child(*args, "start"), "SUSPENDED")
    assert started["status"] == "suspended"
    assert started["persistence"] == "saved"
    c1, c2 = started["pending"]
    assert c1["id"] == "c1"
    assert c1["reason"] == "input_required"
    assert c1["started"] is True
    assert c1["metadata"] == CHILD_METADATA
    assert c1["input"] == {"question": "Which colour?"}
    assert c2["id"] == "c2"
    assert c2["reason"] == "approval_required"
    assert c2["started"] is False
    assert effects.read_text() == ""  # the gated call did not run

    # a separate store instance in this process sees the suspension
    open_turn, revision = await load_open_turn(backend, target, "cross")
    assert open_turn is not None
    assert open_turn.status == "suspended"
    assert open_turn.id == started["turn_id"]
    assert revision == started["revision"]
    assert pending_ids(open_turn) == ["c1", "c2"]

    resumed = child_json(run_child(*args, "resume"), "RESUMED")
    assert resumed["status"] == "completed"
    assert resumed["persistence"] == "saved"
    assert resumed["turn_id"] == started["turn_id"]
    assert resumed["answered"] == {"c1": "blue", "c2": "wrote hello"}
    assert resumed["turns"] == 1
    assert effects.read_text().splitlines() == [f"{started['turn_id']}:c2 hello"]

    turns = await all_turns(backend, target, "cross")
    assert [t.status for t in turns] == ["completed"]
    validate_complete_turns(list(turns[0].messages))


# --- stateless --------------------------------------------------------------------------------


async def test_stateless_resume_from_json() -> None:
    pre_turn_history = [
        Message.user("hello"),
        Message(role="assistant", content=(TextBlock(text="hi, how can I help?"),)),
    ]
    kit = Kit()
    agent, _ = make_agent(
        kit,
        [tool_use(ask_call("First?", "c1"), ask_call("Second?", "c2"))],
        parallel_tool_execution=True,
    )
    first = await agent.run("ask me two things", history=pre_turn_history)
    assert first.status == "suspended"
    assert first.persistence == "none"
    assert first.turn.suspension is not None
    saved = first.turn.suspension.to_json()

    # a partial stateless resume returns a new state
    agent2, model2 = make_agent(Kit(), [text("thanks for both")])
    state = SuspensionState.from_json(saved)
    assert state == first.turn.suspension
    second = await agent2.run(history=pre_turn_history, suspension=state, tool_results={"c1": "x"})
    assert second.status == "suspended"
    assert model2.requests == []
    assert pending_ids(second.turn) == ["c2"]
    assert second.turn.suspension is not None

    # the final resume, from the new state's JSON, completes the turn
    state2 = SuspensionState.from_json(second.turn.suspension.to_json())
    third = await agent2.run(history=pre_turn_history, suspension=state2, tool_results={"c2": "y"})
    assert third.status == "completed"
    assert third.turn.id == first.turn.id
    assert third.output_text == "thanks for both"
    # each result holds the whole turn so far (a prefix of the next one)
    assert third.turn.messages[: len(first.turn.messages)] == first.turn.messages
    assert third.turn.messages[: len(second.turn.messages)] == second.turn.messages
    assert [r.text for r in results_of(third.turn.messages)] == ["x", "y"]
    # the caller's history afterwards is pre_turn_history + result.turn.messages
    history = [*pre_turn_history, *third.turn.messages]
    validate_complete_turns(history)
    assert (history[2].role, history[2].text) == ("user", "ask me two things")
    [request] = model2.requests
    assert list(request.messages[: len(pre_turn_history)]) == pre_turn_history


# --- idempotency and conflicts ----------------------------------------------------------------


async def test_identical_resubmission_is_skipped_and_a_different_result_conflicts() -> None:
    kit = Kit()
    store = MemorySessionStore()
    accepted: list[str] = []
    agent, model = make_agent(
        kit,
        [tool_use(ask_call("A?", "c1"), ask_call("B?", "c2")), text("done")],
        store,
        parallel_tool_execution=True,
        hooks=Hooks(post_tool_use=[lambda ctx: accepted.append(ctx.call.id if ctx.call else "")]),
    )
    await agent.run("go")
    first = await agent.run(tool_results={"c1": {"answer": "yes", "n": 1}})
    assert first.status == "suspended"
    assert accepted == ["c1"]

    # the same result again: accepted once, skipped after
    rec = Recorder()
    again = await agent.run(tool_results={"c1": {"n": 1, "answer": "yes"}}, on_event=rec)
    assert again.status == "suspended"
    assert pending_ids(again.turn) == ["c2"]
    assert accepted == ["c1"]
    assert [r.tool_call_id for r in results_of(again.turn.messages)] == ["c1"]
    assert rec.of(ToolCallResultEvent) == []  # nothing new to report

    # a different result for the accepted call is refused; nothing changes
    before = await store.load("s")
    with pytest.raises(ConflictingToolResultError) as info:
        await agent.run(tool_results={"c1": {"answer": "no", "n": 1}})
    assert isinstance(info.value, ToolCallNotPendingError)
    after = await store.load("s")
    assert after.revision == before.revision
    assert after.open_turn == before.open_turn

    # re-submitting c1 alongside the last answer completes without a duplicate tool message
    done = await agent.run(tool_results={"c1": {"answer": "yes", "n": 1}, "c2": "b"})
    assert done.status == "completed"
    assert accepted == ["c1", "c2"]
    assert [r.tool_call_id for r in results_of(done.turn.messages)] == ["c1", "c2"]
    assert len(model.requests) == 2
    validate_complete_turns(await store.session("s").messages())


# --- partial resume ---------------------------------------------------------------------------


async def test_partial_resume_makes_no_model_call_and_keeps_waiting() -> None:
    kit = Kit()
    store = MemorySessionStore()
    suspends: list[str] = []
    agent, model = make_agent(
        kit,
        [tool_use(ask_call("A?", "c1"), ask_call("B?", "c2")), text("done")],
        store,
        parallel_tool_execution=True,
        hooks=Hooks(on_suspend=[lambda ctx: suspends.append("on_suspend")]),
    )
    first = await agent.run("go")
    assert pending_ids(first.turn) == ["c1", "c2"]
    assert suspends == ["on_suspend"]
    assert len(model.requests) == 1

    stored_at_event: list[list[str]] = []
    delivered: list[ToolCallResultEvent] = []

    async def on_event(event: AgentEvent) -> None:
        if isinstance(event, ToolCallResultEvent):
            delivered.append(event)
            snap = await store.load("s")
            assert snap.open_turn is not None
            stored_at_event.append(pending_ids(snap.open_turn))

    partial = await agent.run(tool_results={"c2": "b"}, on_event=on_event)
    assert partial.status == "suspended"
    assert partial.error is None
    assert partial.persistence == "saved"
    assert len(model.requests) == 1  # no model call
    assert pending_ids(partial.turn) == ["c1"]
    assert partial.turn.suspension is not None
    assert partial.turn.suspension.completed_tool_calls == ("c2",)
    assert suspends == ["on_suspend"]  # not again
    [event] = delivered
    assert (event.call.id, event.state) == ("c2", "completed")
    assert event.result is not None
    assert event.result.text == "b"
    # the reduced pending set was written before the supplied result's event
    assert stored_at_event == [["c1"]]
    snap = await store.load("s")
    assert snap.open_turn is not None
    assert pending_ids(snap.open_turn) == ["c1"]

    done = await agent.run(tool_results={"c1": "a"})
    assert done.status == "completed"
    assert len(model.requests) == 2
    assert suspends == ["on_suspend"]
    assert request_results(model.requests[1]) == [("c1", "a", False), ("c2", "b", False)]


async def test_partial_resume_result_items_include_the_supplied_results() -> None:
    agent, _ = make_agent(
        Kit(),
        [tool_use(ask_call("A?", "c1"), ask_call("B?", "c2"))],
        MemorySessionStore(),
        parallel_tool_execution=True,
    )
    await agent.run("go")
    partial = await agent.run(tool_results={"c2": "b"})
    assert partial.status == "suspended"
    assert [(e.call.id, e.state) for e in partial.tool_call_results()] == [("c2", "completed")]


# --- hooks: order and delivery ----------------------------------------------------------------


async def test_on_suspend_fires_before_post_generation_and_the_write() -> None:
    log: list[str] = []
    store = LoggingStore(log)
    kit = Kit()

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, TurnEndedEvent):
            log.append("turn_ended")

    agent, _ = make_agent(
        kit,
        [tool_use(ask_call("A?", "c1"))],
        store,
        hooks=Hooks(
            on_suspend=[lambda ctx: log.append("on_suspend")],
            post_generation=[lambda ctx: log.append("post_generation")],
            on_incomplete_turn=[lambda ctx: log.append("on_incomplete_turn")],
        ),
    )
    result = await agent.run("go", on_event=on_event)
    assert result.status == "suspended"
    assert log == ["on_suspend", "post_generation", "checkpoint:suspended", "turn_ended"]


async def test_post_hooks_fire_for_supplied_results_in_call_order() -> None:
    log: list[str] = []
    kit = Kit()
    store = MemorySessionStore()

    def post(ctx: HookContext) -> None:
        assert ctx.call is not None
        assert ctx.tool_result is not None
        log.append(f"post:{ctx.call.id}:{ctx.tool_result.text}")

    def failure(ctx: HookContext) -> None:
        assert ctx.call is not None
        assert ctx.tool_result is not None
        log.append(f"failure:{ctx.call.id}:{ctx.tool_result.text}")

    def rewrite(ctx: HookContext) -> None:  # hook mutations propagate
        assert ctx.call is not None
        assert ctx.tool_result is not None
        if ctx.call.id == "c3":
            ctx.tool_result = ToolResult(
                tool_call_id="c3", name="ask_user", content=(TextBlock(text="C (checked)"),)
            )

    agent, model = make_agent(
        kit,
        [
            tool_use(
                ask_call("A?", "c1"),
                ask_call("B?", "c2"),
                ask_call("C?", "c3"),
                call("delete_file", {"path": "p"}, id="c4"),
            ),
            text("done"),
        ],
        store,
        parallel_tool_execution=True,
        hooks=Hooks(post_tool_use=[post, rewrite], post_tool_use_failure=[failure]),
    )
    first = await agent.run("go")
    assert pending_ids(first.turn) == ["c1", "c2", "c3", "c4"]
    assert log == []
    done = await agent.run(
        tool_results={
            "c4": ToolApproval(approved=False, message="no deleting"),
            "c3": "C",
            "c1": ToolReturn(content="A failed", is_error=True),
            "c2": "B",
        }
    )
    assert done.status == "completed"
    assert log == [
        "failure:c1:A failed",
        "post:c2:B",
        "post:c3:C",
        "failure:c4:no deleting",
    ]
    assert [(e.call.id, e.state) for e in done.tool_call_results()] == [
        ("c1", "completed"),
        ("c2", "completed"),
        ("c3", "completed"),
        ("c4", "completed"),
    ]
    assert request_results(model.requests[1]) == [
        ("c1", "A failed", True),
        ("c2", "B", False),
        ("c3", "C (checked)", False),
        ("c4", "no deleting", True),
    ]
    assert "delete_file:p" not in kit.ran


async def test_post_hook_delivery_is_at_least_once_across_a_failed_write() -> None:
    log: list[str] = []
    store = LoggingStore(log)
    kit = Kit()
    agent, model = make_agent(
        kit,
        [tool_use(ask_call("A?", "c1"), ask_call("B?", "c2")), text("done")],
        store,
        parallel_tool_execution=True,
        hooks=Hooks(
            post_tool_use=[lambda ctx: log.append(f"post:{ctx.call.id if ctx.call else ''}")]
        ),
    )
    await agent.run("go")
    before = await store.load("s")
    log.clear()

    store.fail_next = 1
    failed = await agent.run(tool_results={"c1": "a"})
    assert failed.status == "suspended"
    assert failed.persistence == "saved"  # the stored turn, reloaded: unchanged
    assert isinstance(failed.error, SaveRejectedError)
    assert isinstance(failed.save_error, SaveRejectedError)
    assert log == ["post:c1", "checkpoint-refused:suspended"]
    after = await store.load("s")
    assert after.revision == before.revision
    assert after.open_turn == before.open_turn  # nothing landed: c1 is still pending
    assert len(model.requests) == 1

    # the retry delivers the hook again (at-least-once: consumers dedupe on the call id)
    retried = await agent.run(tool_results={"c1": "a"})
    assert retried.status == "suspended"
    assert retried.persistence == "saved"
    assert pending_ids(retried.turn) == ["c2"]
    assert log == ["post:c1", "checkpoint-refused:suspended", "post:c1", "checkpoint:suspended"]


async def test_failed_partial_resume_write_returns_the_stored_turn_with_error() -> None:
    store = LoggingStore([])
    agent, _ = make_agent(
        Kit(),
        [tool_use(ask_call("A?", "c1"), ask_call("B?", "c2"))],
        store,
        parallel_tool_execution=True,
    )
    await agent.run("go")
    store.fail_next = 1
    failed = await agent.run(tool_results={"c1": "a"})
    assert failed.status == "suspended"
    assert failed.error is not None
    assert pending_ids(failed.turn) == ["c1", "c2"]  # the stored turn


async def test_hook_abort_on_partial_resume_keeps_the_turn_suspended() -> None:
    store = MemorySessionStore()
    kit = Kit()

    def abort(ctx: HookContext) -> None:
        raise HookAbort("reviewer said stop")

    agent, _ = make_agent(
        kit,
        [tool_use(ask_call("A?", "c1"), ask_call("B?", "c2"))],
        store,
        parallel_tool_execution=True,
        hooks=Hooks(post_tool_use=[abort]),
    )
    await agent.run("go")
    result = await agent.run(tool_results={"c1": "a"})
    assert states(result.turn)["c2"] != "not_started"  # its tool ran: never "Not run"
    snap = await store.load("s")
    assert snap.open_turn is not None
    assert snap.open_turn.status == "suspended"
    assert result.status == "suspended"
    assert isinstance(result.error, HookAbort)


# --- cancel_suspended_turn --------------------------------------------------------------------


@pytest.mark.parametrize("read_only", [False, True])
async def test_cancel_suspended_turn_closes_without_a_model_call(read_only: bool) -> None:
    kit = Kit(read_only_ask=read_only)
    store = MemorySessionStore()
    incomplete_hooks: list[str] = []

    def on_incomplete(ctx: HookContext) -> None:
        assert ctx.outcome is not None
        incomplete_hooks.append(ctx.outcome.reason)

    agent, model = make_agent(
        kit,
        [
            tool_use(
                ask_call("A?", "c1"), call("delete_file", {"path": "p"}, id="c2"), look("k", "c3")
            )
        ],
        store,
        parallel_tool_execution=True,
        hooks=Hooks(on_incomplete_turn=[on_incomplete]),
    )
    first = await agent.run("go")
    assert first.status == "suspended"
    assert pending_ids(first.turn) == ["c1", "c2"]
    assert first.turn.suspension is not None
    assert [p.started for p in first.turn.suspension.pending_tool_calls] == [True, False]

    rec = Recorder()
    result = await agent.cancel_suspended_turn(on_event=rec)
    assert len(model.requests) == 1  # no model call
    assert result.status == "incomplete"
    assert result.error is None
    assert result.persistence == "saved"
    assert result.outcome is not None
    assert result.outcome.reason == "canceled"
    assert result.outcome.next == ("input" if read_only else "reconcile")
    assert states(result.turn) == {"c1": "unknown", "c2": "not_started", "c3": "completed"}
    assert {r.id: r.reconcile for r in result.turn.tool_calls}["c1"] is (not read_only)
    messages = result.turn.messages
    assert result_for(messages, "c1").text == UNKNOWN_TEXT
    assert result_for(messages, "c1").is_error
    assert result_for(messages, "c2").text == NOT_RUN_TEXT
    assert result_for(messages, "c2").is_error
    assert result_for(messages, "c3").text == "value of k"
    validate_complete_turns(messages)
    assert incomplete_hooks == ["canceled"]
    [ended] = rec.of(TurnEndedEvent)
    assert ended.turn == result.turn

    # the closed turn replaced the suspended one
    turns = await store.turns("s")
    assert [(t.id, t.status) for t in turns] == [(first.turn.id, "incomplete")]
    snap = await store.load("s")
    assert snap.open_turn is not None
    assert snap.open_turn.status == "incomplete"
    assert "delete_file:p" not in kit.ran
    with pytest.raises(NoSuspendedTurnError):
        await agent.cancel_suspended_turn()


async def test_cancel_suspended_turn_stateless() -> None:
    kit = Kit()
    agent, model = make_agent(kit, [tool_use(look("k", "c1"), ask_call("A?", "c2"))])
    first = await agent.run("go")
    assert first.turn.suspension is not None
    state = SuspensionState.from_json(first.turn.suspension.to_json())
    result = await agent.cancel_suspended_turn(history=[], suspension=state)
    assert result.status == "incomplete"
    assert result.error is None
    assert result.persistence == "none"
    assert states(result.turn) == {"c1": "completed", "c2": "unknown"}
    assert result.outcome is not None
    assert result.outcome.next == "reconcile"
    validate_complete_turns(result.turn.messages)
    assert len(model.requests) == 1


async def test_remove_last_turn_deletes_a_suspended_turn() -> None:
    kit = Kit()
    store = MemorySessionStore()
    agent, _ = make_agent(kit, [tool_use(ask_call("A?", "c1")), text("fresh start")], store)
    await agent.run("go")
    await store.session("s").remove_last_turn()
    snap = await store.load("s")
    assert snap.open_turn is None
    assert await store.turns("s") == []
    result = await agent.run("something else")
    assert result.status == "completed"


# --- guards -----------------------------------------------------------------------------------


async def test_guards_on_a_suspended_session() -> None:
    kit = Kit()
    store = MemorySessionStore()
    agent, model = make_agent(kit, [tool_use(ask_call("A?", "c1"))], store)
    with pytest.raises(NoSuspendedTurnError):
        await agent.run(tool_results={"c1": "x"})  # nothing stored yet
    await agent.run("go")
    before = await store.load("s")

    with pytest.raises(InputOnSuspendedSessionError) as info:
        await agent.run("new input")
    assert "tool_results=" in str(info.value)
    assert "cancel_suspended_turn" in str(info.value)
    with pytest.raises(ResumeRequiredError):
        await agent.run(continue_turn=True)
    after = await store.load("s")
    assert after.revision == before.revision
    assert after.open_turn == before.open_turn
    assert len(model.requests) == 1


async def test_tool_results_with_nothing_suspended() -> None:
    kit = Kit()
    store = MemorySessionStore()
    agent, _ = make_agent(kit, [text("hello")], store)
    await agent.run("hi")
    rev = (await store.load("s")).revision
    with pytest.raises(NoSuspendedTurnError):
        await agent.run(tool_results={"c1": "x"})
    assert (await store.load("s")).revision == rev
    stateless, _ = make_agent(kit, [])
    with pytest.raises(NoSuspendedTurnError):
        await stateless.run(tool_results={"c1": "x"})


@pytest.mark.parametrize(
    ("tool_results", "kwargs", "error"),
    [
        ({"nope": "x"}, {}, UnknownToolCallError),
        ({"c3": "again"}, {}, ToolCallNotPendingError),
        ({"c1": "x"}, {"expected_revision": 0}, RevisionConflictError),
        ({"c1": "x"}, {"turn_id": "turn_" + "0" * 32}, RevisionConflictError),
        ({"c1": Suspend(prompt="no")}, {}, InvalidRunError),
        ({"c1": "x", "c2": Suspend(prompt="no")}, {}, InvalidRunError),
        ({}, {}, InvalidRunError),
    ],
)
async def test_bad_resume_input_raises_and_changes_nothing(
    tool_results: Mapping[str, Any], kwargs: dict[str, Any], error: type[Exception]
) -> None:
    kit = Kit()
    store = MemorySessionStore()
    agent, model = make_agent(
        kit,
        [tool_use(ask_call("A?", "c1"), ask_call("B?", "c2"), look("k", "c3")), text("done")],
        store,
        parallel_tool_execution=True,
    )
    await agent.run("go")
    await agent.run(tool_results={"c2": "b"})  # a partial resume: c2 accepted, c1 pending
    before = await store.load("s")
    assert before.open_turn is not None
    assert before.open_turn.status == "suspended"
    with pytest.raises(error) as info:
        await agent.run(tool_results=tool_results, **kwargs)
    assert type(info.value) is error  # each case has its own class
    after = await store.load("s")
    assert after.revision == before.revision
    assert after.open_turn == before.open_turn
    assert len(model.requests) == 1
    assert kit.ran.count("lookup:k") == 1


async def test_background_is_not_a_resume_result() -> None:
    store = MemorySessionStore()
    agent, _ = make_agent(Kit(), [tool_use(ask_call("A?", "c1"))], store)
    await agent.run("go")

    async def later() -> str:
        return "late"

    with pytest.raises(InvalidRunError):
        await agent.run(tool_results={"c1": Background(description="later", fn=later)})
    assert (await store.load("s")).revision == 1


def test_the_bad_input_errors_are_distinct() -> None:
    classes = [
        UnknownToolCallError,
        ToolCallNotPendingError,
        RevisionConflictError,
        InvalidRunError,
        ConflictingToolResultError,
    ]
    for a in classes[:4]:
        for b in classes[:4]:
            if a is not b:
                assert not issubclass(a, b), (a, b)
    assert issubclass(ConflictingToolResultError, ToolCallNotPendingError)


# --- approval ---------------------------------------------------------------------------------


def gated(path: str = "/tmp/x", id: str = "g1") -> ToolCall:
    return call("delete_file", {"path": path}, id=id)


async def test_requires_approval_suspends_before_running() -> None:
    kit = Kit()
    store = MemorySessionStore()
    agent, model = make_agent(kit, [tool_use(gated()), text("deleted it")], store)
    rec = Recorder()
    first = await agent.run("delete it", on_event=rec)
    assert first.status == "suspended"
    assert first.turn.suspension is not None
    [pending] = first.turn.suspension.pending_tool_calls
    assert pending.reason == "approval_required"
    assert pending.started is False
    assert pending.name == "delete_file"
    assert dict(pending.input) == {"path": "/tmp/x"}
    assert "delete_file" in pending.prompt
    assert kit.ran == []  # the tool function was not called
    assert [e.call.id for e in rec.of(ToolCallEvent)] == ["g1"]
    [event] = rec.of(ToolCallResultEvent)
    assert (event.state, event.result, event.suspension) == ("waiting", None, pending)

    done = await agent.run(tool_results={"g1": ToolApproval(approved=True)})
    assert done.status == "completed"
    assert kit.ran == ["delete_file:/tmp/x"]
    assert result_for(done.turn.messages, "g1").text == "deleted /tmp/x"
    assert not result_for(done.turn.messages, "g1").is_error
    assert done.output_text == "deleted it"
    assert len(model.requests) == 2


async def test_an_approval_given_in_a_partial_resume_is_kept_until_the_last_answer() -> None:
    kit = Kit()
    store = MemorySessionStore()
    agent, model = make_agent(
        kit,
        [tool_use(gated("/tmp/a", "g1"), gated("/tmp/b", "g2")), text("deleted both")],
        store,
    )
    first = await agent.run("delete both")
    assert first.status == "suspended"
    partial = await agent.run(tool_results={"g1": ToolApproval(approved=True)})
    assert partial.status == "suspended"
    assert kit.ran == []  # nothing runs until every held call is settled
    done = await agent.run(tool_results={"g2": ToolApproval(approved=True)})
    assert done.status == "completed", done.turn.suspension
    assert sorted(kit.ran) == ["delete_file:/tmp/a", "delete_file:/tmp/b"]
    assert len(model.requests) == 2  # no second approval round for g1


@pytest.mark.parametrize(
    ("message", "expected"), [("no", "no"), (None, DENIED_TEXT)], ids=["message", "default"]
)
async def test_denied_approval_answers_the_call_without_running_it(
    message: str | None, expected: str
) -> None:
    kit = Kit()
    store = MemorySessionStore()
    agent, model = make_agent(kit, [tool_use(gated()), text("ok, not deleting")], store)
    await agent.run("delete it")
    done = await agent.run(tool_results={"g1": ToolApproval(approved=False, message=message)})
    assert done.status == "completed"
    assert kit.ran == []
    answer = result_for(done.turn.messages, "g1")
    assert answer.is_error
    assert answer.text == expected
    assert request_results(model.requests[1]) == [("g1", expected, True)]
    assert DENIED_TEXT == "The user declined this tool call; it was not run."


async def test_approval_for_a_self_suspended_call_becomes_its_result() -> None:
    kit = Kit()
    store = MemorySessionStore()
    agent, _ = make_agent(
        kit,
        [tool_use(ask_call("A?", "c1"), ask_call("B?", "c2")), text("done")],
        store,
        parallel_tool_execution=True,
    )
    await agent.run("go")
    done = await agent.run(
        tool_results={
            "c1": ToolApproval(approved=True),
            "c2": ToolApproval(approved=False, message="nope"),
        }
    )
    assert done.status == "completed"
    c1 = result_for(done.turn.messages, "c1")
    c2 = result_for(done.turn.messages, "c2")
    assert json.loads(c1.text) == {"approved": True, "message": None}
    assert not c1.is_error
    assert json.loads(c2.text) == {"approved": False, "message": "nope"}
    assert c2.is_error
    assert kit.ran == ["ask_user:A?", "ask_user:B?"]  # not re-run


async def test_policy_allow_runs_without_suspending() -> None:
    kit = Kit()
    seen: list[str] = []

    def policy(t: Tool, c: ToolCall) -> ApprovalDecision:
        seen.append(f"{t.name}:{c.id}")
        return allow()

    agent, _ = make_agent(kit, [tool_use(gated()), text("done")], approval_policy=policy)
    result = await agent.run("delete it")
    assert result.status == "completed"
    assert seen == ["delete_file:g1"]
    assert kit.ran == ["delete_file:/tmp/x"]


async def test_pre_tool_use_approved_lets_the_call_through() -> None:
    kit = Kit()

    def approve(ctx: HookContext) -> None:
        ctx.approved = True

    agent, _ = make_agent(
        kit, [tool_use(gated()), text("done")], hooks=Hooks(pre_tool_use=[approve])
    )
    result = await agent.run("delete it")
    assert result.status == "completed"
    assert kit.ran == ["delete_file:/tmp/x"]
    assert result_for(result.turn.messages, "g1").text == "deleted /tmp/x"


async def test_policy_deny_answers_the_call_is_error() -> None:
    kit = Kit()

    async def policy(t: Tool, c: ToolCall) -> ApprovalDecision:
        return deny("policy says no") if t.name == "delete_file" else allow()

    agent, model = make_agent(
        kit, [tool_use(gated(), look("k", "c2")), text("done")], approval_policy=policy
    )
    result = await agent.run("delete it")
    assert result.status == "completed"
    assert result.turn.suspension is None
    assert kit.ran == ["lookup:k"]
    assert request_results(model.requests[1]) == [
        ("g1", "policy says no", True),
        ("c2", "value of k", False),
    ]


async def test_policy_ask_holds_any_tool_with_its_prompt() -> None:
    kit = Kit()

    def policy(t: Tool, c: ToolCall) -> ApprovalDecision:
        return ask(f"May I look up {c.arguments['key']}?")

    agent, _ = make_agent(kit, [tool_use(look("k", "c1")), text("done")], approval_policy=policy)
    first = await agent.run("look it up")
    assert first.status == "suspended"
    assert first.turn.suspension is not None
    [pending] = first.turn.suspension.pending_tool_calls
    assert (pending.reason, pending.started, pending.prompt) == (
        "approval_required",
        False,
        "May I look up k?",
    )
    assert kit.ran == []


# --- cancellation -----------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["soft", "hard", "gate"])
async def test_a_suspension_reached_after_cancellation_is_saved(how: str) -> None:
    token = CancelToken()
    kit = Kit(cancel=token)
    store = MemorySessionStore()
    suspends: list[str] = []

    def soft_in_pre_tool_use(ctx: HookContext) -> None:
        token.soft_cancel()

    if how == "gate":
        script = [tool_use(gated(id="c1"))]
        hooks = Hooks(
            pre_tool_use=[soft_in_pre_tool_use], on_suspend=[lambda ctx: suspends.append("s")]
        )
    else:
        name = "ask_soft" if how == "soft" else "ask_hard"
        script = [tool_use(call(name, {"question": "Q?"}, id="c1"))]
        hooks = Hooks(on_suspend=[lambda ctx: suspends.append("s")])
    agent, model = make_agent(kit, script, store, hooks=hooks)
    result = await agent.run("go", cancel=token)
    assert token.soft_cancel_requested
    assert result.status == "suspended"
    assert result.error is None
    assert result.persistence == "saved"
    assert pending_ids(result.turn) == ["c1"]
    assert suspends == ["s"]
    snap = await store.load("s")
    assert snap.open_turn is not None
    assert snap.open_turn.status == "suspended"
    assert len(model.requests) == 1


@pytest.mark.parametrize("how", ["soft", "hard"])
async def test_suspension_after_cancellation_with_later_calls_is_saved(how: str) -> None:
    token = CancelToken()
    kit = Kit(cancel=token)
    store = MemorySessionStore()
    name = "ask_soft" if how == "soft" else "ask_hard"
    agent, _ = make_agent(
        kit, [tool_use(call(name, {"question": "Q?"}, id="c1"), look("k", "c2"))], store
    )
    result = await agent.run("go", cancel=token)
    # whatever the status, a call whose tool ran is never reported "Not run"
    assert states(result.turn)["c1"] != "not_started"
    assert result.status == "suspended"
    assert pending_ids(result.turn) == ["c1"]


# --- the example ------------------------------------------------------------------------------


def run_example(tmp: Path, *args: str) -> str:
    env = {**os.environ, "DIVE_APPROVAL_DB": str(tmp / "db" / "approval.db")}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "human_approval.py"), *args],
        capture_output=True,
        text=True,
        cwd=tmp,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_human_approval_example_approve(tmp_path: Path) -> None:
    report = tmp_path / "db" / "old-report.txt"
    out = run_example(tmp_path, "start")
    assert "suspended: approval_required for delete_file" in out
    assert report.exists()
    out = run_example(tmp_path, "approve")
    assert f"tool result: deleted {report}" in out
    assert "status=completed; assistant: Done: the old report is gone." in out
    assert not report.exists()
    assert "nothing is waiting for approval" in run_example(tmp_path, "approve")


def test_human_approval_example_deny(tmp_path: Path) -> None:
    report = tmp_path / "db" / "old-report.txt"
    run_example(tmp_path, "start")
    out = run_example(tmp_path, "deny", "not now")
    assert "tool result: not now" in out
    assert "status=completed; assistant: Understood, I left it in place." in out
    assert report.exists()


async def test_resubmitting_an_earlier_approval_with_the_last_answer_is_fine() -> None:
    kit = Kit()
    agent, _ = make_agent(
        kit,
        [tool_use(gated("/tmp/a", "g1"), gated("/tmp/b", "g2")), text("deleted both")],
        MemorySessionStore(),
    )
    await agent.run("delete both")
    await agent.run(tool_results={"g1": ToolApproval(approved=True)})
    done = await agent.run(
        tool_results={"g1": ToolApproval(approved=True), "g2": ToolApproval(approved=True)}
    )
    assert done.status == "completed"
    assert sorted(kit.ran) == ["delete_file:/tmp/a", "delete_file:/tmp/b"]
