"""The turn outcome contract (turns.md §2-§8, §10, §12, §19), driven by ScriptedModel faults.

One test per row of the §3 reasons table, each produced by the real situation; the closing
rules of §6; persistence and salvage (§8); continue (§10); process-exit recovery (§14);
superseded records and ``require_reconcile`` (§12). Cancellation lives in test_turn_cancel.py.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from dive.agent import (
    Agent,
    AgentEvent,
    HookContext,
    Hooks,
    IncompleteTurns,
    Limits,
    MessageEvent,
    RunResult,
    ToolCallEvent,
    ToolCallResultEvent,
    TurnEndedEvent,
)
from dive.errors import (
    ContinueWithInputError,
    DeadlineExceededError,
    EventHandlerError,
    HookAbort,
    InvalidRunError,
    ProviderConnectionError,
    SaveRejectedError,
    StreamInterruptedError,
    UnreconciledToolCallsError,
)
from dive.llm import ModelResponse, ToolChoice
from dive.messages import (
    EffectType,
    Message,
    ServerToolCall,
    TextBlock,
    ToolCall,
    ToolResult,
    validate_complete_turns,
)
from dive.sessions import MemorySessionStore, Session
from dive.testing import ScriptedModel, Step, call, text, tool_use
from dive.tools import FunctionTool, tool
from dive.turns import (
    NOT_RUN_TEXT,
    UNKNOWN_TEXT,
    CancelToken,
    ToolCallRecord,
    Turn,
    TurnOutcome,
    find_latest_reminder,
    find_latest_turn_outcome,
    find_turn_outcome,
)

# --- helpers ----------------------------------------------------------------------------------


class Collector:
    """An ``on_event`` handler that keeps every event; optionally raises on one event type."""

    def __init__(self, fail_on: type[Any] | None = None) -> None:
        self.events: list[AgentEvent] = []
        self.fail_on = fail_on

    async def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)
        if self.fail_on is not None and isinstance(event, self.fail_on):
            raise RuntimeError("the handler broke")

    def check_contract(self) -> None:
        """Exactly one ``turn_ended``, last; every ``tool_call`` has one ``tool_call_result``."""
        ended = [e for e in self.events if isinstance(e, TurnEndedEvent)]
        assert len(ended) == 1
        assert isinstance(self.events[-1], TurnEndedEvent)
        announced = [e.call.id for e in self.events if isinstance(e, ToolCallEvent)]
        answered = [e.call.id for e in self.events if isinstance(e, ToolCallResultEvent)]
        assert sorted(announced) == sorted(answered)
        assert len(set(answered)) == len(answered)


class Counter:
    """Counts tool invocations."""

    def __init__(self) -> None:
        self.calls: list[str] = []


def make_add(counter: Counter, **governance: Any) -> FunctionTool:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        counter.calls.append("add")
        return a + b

    return FunctionTool(add, **governance)


def result_text(r: ToolResult) -> str:
    return "".join(b.text for b in r.content if isinstance(b, TextBlock))


def answers(messages: Sequence[Message]) -> list[tuple[str, str, bool]]:
    """Every tool result as ``(tool_call_id, text, is_error)``, in order."""
    return [
        (r.tool_call_id, result_text(r), r.is_error)
        for m in messages
        if (r := m.tool_result) is not None
    ]


def note_text(messages: Sequence[Message]) -> str:
    found = find_latest_reminder(messages, "turn-incomplete")
    assert found is not None
    return found.content


def check_incomplete(result: RunResult[Any], reason: str, *, next: str, error: bool) -> TurnOutcome:
    """The common §2/§3/§6 checks of an incomplete result; returns its outcome."""
    assert result.status == "incomplete"
    outcome = result.outcome
    assert outcome is not None
    assert outcome is result.turn.outcome
    assert outcome.reason == reason
    assert outcome.next == next
    assert (result.error is not None) is error
    messages = result.turn.messages
    assert result.output_messages == messages
    validate_complete_turns(messages)
    # the outcome note is the last message and carries the outcome
    assert find_turn_outcome(messages[-1]) == outcome
    assert find_latest_turn_outcome(messages) == outcome
    assert messages[-1].role == "user"
    return outcome


def new_turn_id() -> str:
    return "turn_" + uuid.uuid4().hex


async def wait_for(predicate: Callable[[], bool]) -> None:
    """Poll ``predicate`` for up to about a second."""
    for _ in range(1000):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("the condition never became true")


# --- §3: one test per reason ----------------------------------------------------------------


async def test_reason_canceled_by_token_during_slow_model_call() -> None:
    model = ScriptedModel([Step(response=text("too late"), delay=1.0)])
    agent = Agent(model=model)
    token = CancelToken()
    task = asyncio.create_task(agent.run("hi", cancel=token))
    await wait_for(lambda: bool(model.requests))
    token.cancel()
    result = await task
    outcome = check_incomplete(result, "canceled", next="input", error=True)
    assert outcome.tool_calls == ()
    messages = result.turn.messages
    assert [m.role for m in messages] == ["user", "user"]
    assert messages[0].text == "hi"
    assert note_text(messages) == (
        "The previous turn was stopped by the user before it finished. Everything above this "
        "note, including every tool result, happened as shown. Do not repeat completed steps "
        "or assume unfinished ones happened. Wait for the user's next instruction rather than "
        "resuming the stopped work on your own."
    )


async def test_reason_deadline() -> None:
    model = ScriptedModel([Step(response=text("too late"), delay=1.0)])
    agent = Agent(model=model, limits=Limits(response_timeout=0.05))
    result = await agent.run("hi")
    outcome = check_incomplete(result, "deadline", next="continue", error=True)
    assert isinstance(result.error, DeadlineExceededError)
    assert outcome.error
    assert "the turn's time limit was reached" in note_text(result.turn.messages)


async def test_reason_provider_error() -> None:
    boom = ProviderConnectionError("connection refused")
    model = ScriptedModel([Step(raise_before=boom)])
    result = await Agent(model=model).run("hi")
    outcome = check_incomplete(result, "provider_error", next="continue", error=True)
    assert result.error is boom
    assert outcome.error == "connection refused"
    assert [m.role for m in result.turn.messages] == ["user", "user"]


async def test_reason_stream_interrupted_keeps_partial_text() -> None:
    # events: message_start, block_start, text delta | cut with an error
    step = Step(response=text("hello world"), cut_after=3, cut_error=ConnectionResetError("rst"))
    model = ScriptedModel([step])
    result = await Agent(model=model).run("hi")
    outcome = check_incomplete(result, "stream_interrupted", next="continue", error=True)
    assert isinstance(result.error, StreamInterruptedError)
    assert outcome.usage_unknown
    messages = result.turn.messages
    assert [m.role for m in messages] == ["user", "assistant", "user"]
    assert messages[-2].text == "hello world"


async def test_reason_stream_interrupted_drop_partial_text() -> None:
    step = Step(response=text("hello world"), cut_after=3, cut_error=ConnectionResetError("rst"))
    model = ScriptedModel([step])
    agent = Agent(model=model, incomplete_turns=IncompleteTurns(drop_partial_text=True))
    result = await agent.run("hi")
    check_incomplete(result, "stream_interrupted", next="continue", error=True)
    assert [m.role for m in result.turn.messages] == ["user", "user"]
    assert all("hello" not in m.text for m in result.turn.messages)


async def test_reason_stream_interrupted_without_message_stop() -> None:
    # every event but message_stop arrives, then the stream ends quietly
    model = ScriptedModel([Step(response=text("almost done"), cut_after=5)])
    result = await Agent(model=model).run("hi")
    check_incomplete(result, "stream_interrupted", next="continue", error=True)
    assert isinstance(result.error, StreamInterruptedError)
    messages = result.turn.messages
    assert messages[-2].role == "assistant"
    assert messages[-2].text == "almost done"


async def test_stream_interrupted_after_usage_frame_is_not_usage_unknown() -> None:
    # §3/§18: usage_unknown only if no usage frame came; message_delta (with usage) did come
    model = ScriptedModel([Step(response=text("almost done"), cut_after=5)])
    result = await Agent(model=model).run("hi")
    outcome = check_incomplete(result, "stream_interrupted", next="continue", error=True)
    assert not outcome.usage_unknown


async def test_reason_hook_abort_names_the_hook() -> None:
    def abort(ctx: HookContext) -> None:
        raise HookAbort("policy says no")

    model = ScriptedModel([text("never")])
    agent = Agent(model=model, hooks=Hooks(pre_iteration=[abort]))
    result = await agent.run("hi")
    outcome = check_incomplete(result, "hook_abort", next="input", error=True)
    assert isinstance(result.error, HookAbort)
    assert outcome.hook == "pre_iteration"
    assert outcome.error == "policy says no"
    assert model.requests == []


async def test_reason_callback_error() -> None:
    collector = Collector(fail_on=MessageEvent)
    model = ScriptedModel([text("hi there")])
    result = await Agent(model=model).run("hi", on_event=collector)
    check_incomplete(result, "callback_error", next="continue", error=True)
    assert isinstance(result.error, EventHandlerError)
    messages = result.turn.messages
    assert messages[-2].role == "assistant"
    assert messages[-2].text == "hi there"
    collector.check_contract()


async def test_reason_error_from_pre_generation() -> None:
    def broken(ctx: HookContext) -> None:
        raise ValueError("bad setup")

    model = ScriptedModel([text("never")])
    result = await Agent(model=model, hooks=Hooks(pre_generation=[broken])).run("hi")
    outcome = check_incomplete(result, "error", next="input", error=True)
    assert isinstance(result.error, ValueError)
    assert outcome.error == "bad setup"
    assert result.turn.messages[0].text == "hi"  # the input is kept
    assert model.requests == []


async def test_reason_output_limit_drops_truncated_call_and_answers_complete_one() -> None:
    counter = Counter()
    response = tool_use(
        call("add", {"a": 1, "b": 2}, id="c_ok"),
        ToolCall(id="c_cut", name="add", raw_arguments='{"a": 1, "b'),
        text="working",
        stop_reason="max_tokens",
    )
    model = ScriptedModel([response])
    result = await Agent(model=model, tools=[make_add(counter)]).run("hi")
    outcome = check_incomplete(result, "output_limit", next="continue", error=False)
    assert counter.calls == []
    messages = result.turn.messages
    assistant = messages[1]
    assert assistant.role == "assistant"
    assert [c.id for c in assistant.tool_calls] == ["c_ok"]
    assert assistant.text == "working"
    assert answers(messages) == [("c_ok", NOT_RUN_TEXT, True)]
    assert all(c.id != "c_cut" for m in messages for c in m.tool_calls)
    assert [(c.id, c.state) for c in outcome.tool_calls] == [("c_ok", "not_started")]


async def test_reason_context_limit() -> None:
    counter = Counter()
    response = tool_use(
        call("add", {"a": 1, "b": 2}, id="c1"), stop_reason="model_context_window_exceeded"
    )
    model = ScriptedModel([response])
    result = await Agent(model=model, tools=[make_add(counter)]).run("hi")
    outcome = check_incomplete(result, "context_limit", next="input", error=False)
    assert counter.calls == []
    assert answers(result.turn.messages) == [("c1", NOT_RUN_TEXT, True)]
    assert [c.state for c in outcome.tool_calls] == ["not_started"]


async def test_reason_iteration_limit_last_model_call() -> None:
    counter = Counter()
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2}, id="c1"))])
    agent = Agent(model=model, tools=[make_add(counter)], limits=Limits(max_model_calls_per_turn=1))
    result = await agent.run("hi")
    outcome = check_incomplete(result, "iteration_limit", next="continue", error=False)
    assert counter.calls == []
    assert model.requests[0].settings.tool_choice == ToolChoice(type="none")
    assert answers(result.turn.messages) == [("c1", NOT_RUN_TEXT, True)]
    assert [c.state for c in outcome.tool_calls] == ["not_started"]


async def test_reason_iteration_limit_max_tool_calls() -> None:
    counter = Counter()
    response = tool_use(
        call("add", {"a": 1, "b": 2}, id="c1"), call("add", {"a": 3, "b": 4}, id="c2")
    )
    model = ScriptedModel([response])
    agent = Agent(model=model, tools=[make_add(counter)], limits=Limits(max_tool_calls_per_turn=1))
    result = await agent.run("hi")
    check_incomplete(result, "iteration_limit", next="continue", error=False)
    assert counter.calls == []
    assert answers(result.turn.messages) == [
        ("c1", NOT_RUN_TEXT, True),
        ("c2", NOT_RUN_TEXT, True),
    ]


async def test_reason_provider_stopped_error_stop() -> None:
    model = ScriptedModel([text("partial", stop_reason="error")])
    result = await Agent(model=model).run("hi")
    outcome = check_incomplete(result, "provider_stopped", next="continue", error=False)
    assert outcome.error == "error"
    assert result.stop_reason == "error"


async def test_reason_provider_stopped_unknown_stop_with_tool_call() -> None:
    counter = Counter()
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2}, id="c1"), stop_reason="weird")])
    result = await Agent(model=model, tools=[make_add(counter)]).run("hi")
    outcome = check_incomplete(result, "provider_stopped", next="continue", error=False)
    assert outcome.error == "weird"
    assert counter.calls == []
    assert answers(result.turn.messages) == [("c1", NOT_RUN_TEXT, True)]


async def test_reason_provider_stopped_empty_stop_with_tool_call_is_none() -> None:
    counter = Counter()
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2}, id="c1"), stop_reason="")])
    result = await Agent(model=model, tools=[make_add(counter)]).run("hi")
    outcome = check_incomplete(result, "provider_stopped", next="continue", error=False)
    assert outcome.error == "none"
    assert counter.calls == []


async def test_unknown_stop_text_only_is_completed() -> None:
    model = ScriptedModel([text("fine", stop_reason="weird")])
    result = await Agent(model=model).run("hi")
    assert result.status == "completed"
    assert result.outcome is None


async def test_reason_pause_gives_up_and_drops_trailing_server_call() -> None:
    script: list[Any] = [text(f"working {i}", stop_reason="pause_turn") for i in range(10)]
    script.append(
        ModelResponse(
            content=(
                TextBlock(text="searching"),
                ServerToolCall(id="srvtoolu_1", name="web_search", input={"query": "x"}),
            ),
            stop_reason="pause_turn",
        )
    )
    model = ScriptedModel(script)
    result = await Agent(model=model).run("hi")
    check_incomplete(result, "pause", next="continue", error=False)
    model.assert_consumed()
    assert len(model.requests) == 11
    messages = result.turn.messages
    assert not any(isinstance(b, ServerToolCall) for m in messages for b in m.content)
    assert messages[-2].role == "assistant"
    assert messages[-2].text == "searching"
    # each resend is unchanged: the request ends with the paused response, no new message
    for k in range(1, 11):
        sent = model.requests[k].messages
        assert sent[-1].role == "assistant"
        assert sent[-1].text == f"working {k - 1}"


async def test_pause_resends_do_not_count_against_model_call_limit() -> None:
    counter = Counter()
    model = ScriptedModel(
        [
            text("", stop_reason="pause_turn"),
            text("still going", stop_reason="pause_turn"),
            tool_use(call("add", {"a": 1, "b": 2}, id="c1")),
            text("3"),
        ]
    )
    agent = Agent(model=model, tools=[make_add(counter)], limits=Limits(max_model_calls_per_turn=2))
    result = await agent.run("hi")
    assert result.status == "completed"
    assert result.outcome is None
    assert counter.calls == ["add"]
    assert result.turn.model_calls == 2
    assert result.output_text == "3"
    model.assert_consumed()


async def _running_turn(session: Session, tool_name: str) -> Turn:
    turn = Turn(
        id=new_turn_id(),
        status="running",
        messages=(
            Message.user("write it"),
            Message(
                role="assistant",
                content=(ToolCall(id="c_run", name=tool_name, arguments={"a": 1, "b": 2}),),
            ),
        ),
        tool_calls=(ToolCallRecord(id="c_run", name=tool_name, state="running"),),
    )
    await session.checkpoint(turn, expected_revision=0)
    return turn


@pytest.mark.parametrize(
    ("effect", "expected_next"), [(None, "reconcile"), ("read_only", "continue")]
)
async def test_reason_process_exit(effect: str | None, expected_next: str) -> None:
    store = MemorySessionStore()
    session = store.session("s1")
    counter = Counter()
    crashed = await _running_turn(session, "add")
    model = ScriptedModel([text("ok")])
    agent = Agent(model=model, tools=[make_add(counter, effect_type=effect)])
    result = await agent.run("next", session=session)
    assert result.status == "completed"
    assert counter.calls == []  # recovery runs nothing

    turns = await session.turns()
    assert [t.id for t in turns] == [crashed.id, result.turn.id]
    closed = turns[0]
    assert closed.status == "incomplete"
    assert closed.superseded
    outcome = closed.outcome
    assert outcome is not None
    assert outcome.reason == "process_exit"
    assert outcome.next == expected_next
    assert [(c.id, c.state) for c in closed.tool_calls] == [("c_run", "unknown")]
    assert closed.tool_calls[0].reconcile is (effect is None)
    validate_complete_turns(closed.messages)
    assert answers(closed.messages) == [("c_run", UNKNOWN_TEXT, True)]
    assert find_turn_outcome(closed.messages[-1]) == outcome
    # the model saw the closed turn before the new input
    sent = model.requests[0].messages
    assert find_latest_turn_outcome(sent) == outcome
    assert sent[-1].text == "next"


# --- §6: closing rules ------------------------------------------------------------------------


async def test_closing_answers_every_call_in_order_with_exact_texts() -> None:
    started = asyncio.Event()

    @tool(timeout=0.05)
    async def hang() -> str:
        """Never returns in time."""
        await asyncio.sleep(5)
        return "never"

    @tool
    async def slow() -> str:
        """Runs until cancelled."""
        started.set()
        await asyncio.sleep(5)
        return "never"

    counter = Counter()
    response = tool_use(
        call("hang", id="c1"), call("slow", id="c2"), call("add", {"a": 1, "b": 2}, id="c3")
    )
    model = ScriptedModel([response])
    agent = Agent(model=model, tools=[hang, slow, make_add(counter)], parallel_tool_execution=False)
    token = CancelToken()
    collector = Collector()
    task = asyncio.create_task(agent.run("go", cancel=token, on_event=collector))
    await asyncio.wait_for(started.wait(), 1.0)
    token.cancel()
    result = await task

    outcome = check_incomplete(result, "canceled", next="reconcile", error=True)
    assert counter.calls == []
    assert answers(result.turn.messages) == [
        ("c1", 'Tool "hang" timed out after 0.05 s.', True),
        ("c2", UNKNOWN_TEXT, True),
        ("c3", NOT_RUN_TEXT, True),
    ]
    assert [(c.id, c.state, c.reconcile) for c in outcome.tool_calls] == [
        ("c1", "unknown", True),
        ("c2", "unknown", True),
        ("c3", "not_started", False),
    ]
    note = find_latest_reminder(result.turn.messages, "turn-incomplete")
    assert note is not None
    assert isinstance(note.details, dict)
    details: dict[str, Any] = note.details
    assert details["reason"] == "canceled"
    assert details["next"] == "reconcile"
    assert details["error"]
    assert [c["id"] for c in details["tool_calls"]] == ["c1", "c2", "c3"]
    assert '"Not run"' in note.content
    assert '"Unknown result"' in note.content
    collector.check_contract()


async def test_note_has_no_not_run_explanation_when_all_calls_completed() -> None:
    counter = Counter()
    collector = Collector(fail_on=ToolCallResultEvent)
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2}, id="c1"))])
    result = await Agent(model=model, tools=[make_add(counter)]).run("go", on_event=collector)
    outcome = check_incomplete(result, "callback_error", next="continue", error=True)
    assert counter.calls == ["add"]
    assert [(c.id, c.state) for c in outcome.tool_calls] == [("c1", "completed")]
    assert answers(result.turn.messages) == [("c1", "3", False)]
    content = note_text(result.turn.messages)
    assert "Not run" not in content
    assert "Unknown result" not in content
    collector.check_contract()


async def test_note_explains_not_run_when_a_call_did_not_start() -> None:
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2}), stop_reason="max_tokens")])
    result = await Agent(model=model, tools=[make_add(Counter())]).run("go")
    check_incomplete(result, "output_limit", next="continue", error=False)
    assert '"Not run"' in note_text(result.turn.messages)


@pytest.mark.parametrize(
    ("effect", "expected_next"),
    [(None, "reconcile"), ("write", "reconcile"), ("read_only", "input")],
)
async def test_reconcile_override_only_for_unknown_non_read_only(
    effect: EffectType | None, expected_next: str
) -> None:
    started = asyncio.Event()

    async def slow() -> str:
        """Runs until cancelled."""
        started.set()
        await asyncio.sleep(5)
        return "never"

    model = ScriptedModel([tool_use(call("slow", id="c1"))])
    agent = Agent(model=model, tools=[FunctionTool(slow, effect_type=effect)])
    token = CancelToken()
    task = asyncio.create_task(agent.run("go", cancel=token))
    await asyncio.wait_for(started.wait(), 1.0)
    token.cancel()
    result = await task
    outcome = check_incomplete(result, "canceled", next=expected_next, error=True)
    # the annotation changes the advice, not the record
    assert [c.state for c in outcome.tool_calls] == ["unknown"]
    assert outcome.tool_calls[0].reconcile is (expected_next == "reconcile")


async def test_not_started_calls_keep_default_next() -> None:
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2}), stop_reason="error")])
    result = await Agent(model=model, tools=[make_add(Counter())]).run("go")
    outcome = check_incomplete(result, "provider_stopped", next="continue", error=False)
    assert [c.state for c in outcome.tool_calls] == ["not_started"]


# --- §8: persistence and salvage --------------------------------------------------------------


class RejectingStore(MemorySessionStore):
    async def checkpoint(self, id: str, turn: Turn, *, expected_revision: int) -> int:
        raise SaveRejectedError("store is read-only")


class BrokenStore(MemorySessionStore):
    async def checkpoint(self, id: str, turn: Turn, *, expected_revision: int) -> int:
        raise RuntimeError("disk on fire")


class HangingStore(MemorySessionStore):
    async def checkpoint(self, id: str, turn: Turn, *, expected_revision: int) -> int:
        await asyncio.sleep(5)
        return await super().checkpoint(id, turn, expected_revision=expected_revision)


async def test_persistence_saved() -> None:
    store = MemorySessionStore()
    session = store.session("s1")
    result = await Agent(model=ScriptedModel([text("ok")])).run("hi", session=session)
    assert result.status == "completed"
    assert result.persistence == "saved"
    assert result.save_error is None
    turns = await session.turns()
    assert [t.id for t in turns] == [result.turn.id]
    assert result.turn.revision == (await session.load()).revision == 1


async def test_persistence_none_without_session() -> None:
    result = await Agent(model=ScriptedModel([text("ok")])).run("hi")
    assert result.persistence == "none"
    assert result.save_error is None


async def test_persistence_failed_when_store_rejects() -> None:
    store = RejectingStore()
    session = store.session("s1")
    result = await Agent(model=ScriptedModel([text("ok")])).run("hi", session=session)
    assert result.status == "completed"
    assert result.error is None
    assert result.persistence == "failed"
    assert isinstance(result.save_error, SaveRejectedError)
    assert await session.turns() == []


async def test_persistence_unknown_when_store_raises_other_error() -> None:
    session = BrokenStore().session("s1")
    result = await Agent(model=ScriptedModel([text("ok")])).run("hi", session=session)
    assert result.status == "completed"
    assert result.persistence == "unknown"
    assert isinstance(result.save_error, RuntimeError)


async def test_persistence_unknown_when_save_times_out() -> None:
    session = HangingStore().session("s1")
    agent = Agent(
        model=ScriptedModel([text("ok")]),
        incomplete_turns=IncompleteTurns(save_timeout=0.05),
    )
    result = await asyncio.wait_for(agent.run("hi", session=session), 1.0)
    assert result.status == "completed"
    assert result.persistence == "unknown"
    assert result.save_error is not None


async def test_incomplete_turn_with_failed_save_reports_both() -> None:
    session = RejectingStore().session("s1")
    model = ScriptedModel([Step(raise_before=ProviderConnectionError("down"))])
    result = await Agent(model=model).run("hi", session=session)
    check_incomplete(result, "provider_error", next="continue", error=True)
    assert result.persistence == "failed"
    assert isinstance(result.save_error, SaveRejectedError)


async def test_final_save_happens_after_token_cancel() -> None:
    store = MemorySessionStore()
    session = store.session("s1")
    model = ScriptedModel([Step(response=text("late"), delay=1.0)])
    token = CancelToken()
    collector = Collector()
    task = asyncio.create_task(
        Agent(model=model).run("hi", session=session, cancel=token, on_event=collector)
    )
    await wait_for(lambda: bool(model.requests))
    token.cancel()
    result = await task
    check_incomplete(result, "canceled", next="input", error=True)
    assert result.persistence == "saved"
    turns = await session.turns()
    assert [t.id for t in turns] == [result.turn.id]
    assert turns[0].status == "incomplete"
    assert turns[0].outcome == result.outcome
    collector.check_contract()
    last = collector.events[-1]
    assert isinstance(last, TurnEndedEvent)
    assert last.turn.persistence == "saved"


async def test_new_input_supersedes_incomplete_turn() -> None:
    store = MemorySessionStore()
    session = store.session("s1")
    model = ScriptedModel([Step(raise_before=ProviderConnectionError("down")), text("ok")])
    agent = Agent(model=model)
    first = await agent.run("one", session=session)
    assert first.status == "incomplete"
    second = await agent.run("two", session=session)
    assert second.status == "completed"
    assert second.turn.id != first.turn.id
    assert second.turn.origin.kind == "input"
    turns = await session.turns()
    assert [t.id for t in turns] == [first.turn.id, second.turn.id]
    old = turns[0]
    assert old.superseded
    assert old.status == "incomplete"
    assert old.messages == first.turn.messages
    assert old.outcome == first.outcome
    # the model still sees the old turn in closed form
    sent = model.requests[1].messages
    assert list(sent[: len(first.turn.messages)]) == list(first.turn.messages)
    assert sent[-1].text == "two"


# --- §10: continue ----------------------------------------------------------------------------


async def test_continue_folds_into_open_incomplete_turn() -> None:
    counter = Counter()
    store = MemorySessionStore()
    session = store.session("s1")
    cut = Step(response=text("partial answer"), cut_after=3, cut_error=ConnectionResetError("x"))
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2}, id="c1")), cut])
    agent = Agent(model=model, tools=[make_add(counter)])
    first = await agent.run("add them", session=session)
    check_incomplete(first, "stream_interrupted", next="continue", error=True)
    assert counter.calls == ["add"]

    model.add(text("The answer is 3."))
    second = await agent.run(continue_turn=True, session=session)
    assert second.status == "completed"
    assert second.turn.id == first.turn.id
    assert second.turn.origin == first.turn.origin
    assert counter.calls == ["add"]  # no tool re-run
    assert second.turn.usage == first.turn.usage + second.usage

    sent = model.requests[-1].messages
    assert find_latest_turn_outcome(sent) is None  # the note is removed from what the model sees
    # history ended in an assistant message: the turn-continue reminder is recorded
    assert find_latest_reminder(sent, "turn-continue") is not None
    assert sent[-1].role == "user"
    assert sent[-2].role == "assistant"
    assert sent[-2].text == "partial answer"
    messages = second.turn.messages
    validate_complete_turns(messages)
    assert find_latest_reminder(messages, "turn-continue") is not None
    assert find_latest_turn_outcome(messages) is None
    assert messages[-1].text == "The answer is 3."
    assert messages[0].text == "add them"

    turns = await session.turns()
    assert [(t.id, t.status) for t in turns] == [(first.turn.id, "completed")]


async def test_continue_after_tool_result_uses_model_only_reminder() -> None:
    counter = Counter()
    store = MemorySessionStore()
    session = store.session("s1")
    model = ScriptedModel(
        [
            tool_use(call("add", {"a": 1, "b": 2}, id="c1")),
            Step(raise_before=ProviderConnectionError("down")),
        ]
    )
    agent = Agent(model=model, tools=[make_add(counter)])
    first = await agent.run("add them", session=session)
    check_incomplete(first, "provider_error", next="continue", error=True)

    model.add(text("3"))
    second = await agent.run(continue_turn=True, session=session)
    assert second.status == "completed"
    assert second.turn.id == first.turn.id
    assert counter.calls == ["add"]
    sent = model.requests[-1].messages
    assert find_latest_turn_outcome(sent) is None
    assert find_latest_reminder(sent, "turn-continue") is not None
    assert find_latest_reminder(second.turn.messages, "turn-continue") is None


async def test_stateless_continue_with_history_starts_continue_turn() -> None:
    model = ScriptedModel([Step(raise_before=ProviderConnectionError("down")), text("resumed")])
    agent = Agent(model=model)
    first = await agent.run("hi")
    assert first.status == "incomplete"
    history = list(first.turn.messages)
    second = await agent.run(continue_turn=True, history=history)
    assert second.status == "completed"
    assert second.turn.origin.kind == "continue"
    assert second.turn.id != first.turn.id
    sent = model.requests[-1].messages
    assert list(sent[: len(history)]) == history
    # history ends in the outcome note: the turn-continue reminder is model-only
    assert find_latest_reminder(sent, "turn-continue") is not None
    assert find_latest_reminder(second.turn.messages, "turn-continue") is None


async def test_continue_with_input_raises_before_anything() -> None:
    store = MemorySessionStore()
    session = store.session("s1")
    model = ScriptedModel([Step(raise_before=ProviderConnectionError("down"))])
    agent = Agent(model=model)
    await agent.run("hi", session=session)
    revision = (await session.load()).revision
    with pytest.raises(ContinueWithInputError):
        await agent.run("more", continue_turn=True, session=session)
    assert len(model.requests) == 1
    assert (await session.load()).revision == revision


async def test_continue_with_no_history_raises() -> None:
    model = ScriptedModel([text("never")])
    agent = Agent(model=model)
    with pytest.raises(InvalidRunError):
        await agent.run(continue_turn=True)
    with pytest.raises(InvalidRunError):
        await agent.run(continue_turn=True, session=MemorySessionStore().session("empty"))
    assert model.requests == []


# --- §12: require_reconcile -------------------------------------------------------------------


async def test_require_reconcile_refuses_new_input_and_allows_continue() -> None:
    store = MemorySessionStore()
    session = store.session("s1")
    crashed = await _running_turn(session, "add")
    counter = Counter()
    model = ScriptedModel([text("checked; nothing to redo")])
    agent = Agent(
        model=model,
        tools=[make_add(counter)],
        incomplete_turns=IncompleteTurns(require_reconcile=True),
    )
    with pytest.raises(UnreconciledToolCallsError):
        await agent.run("new work", session=session)
    assert model.requests == []
    snap = await session.load()
    assert snap.latest_outcome is not None
    assert snap.latest_outcome.next == "reconcile"

    result = await agent.run(continue_turn=True, session=session)
    assert result.status == "completed"
    assert result.turn.id == crashed.id
    assert counter.calls == []
    assert (await session.load()).latest_outcome is None

    model.add(text("fresh"))
    later = await agent.run("new work", session=session)
    assert later.status == "completed"
