"""The agent loop driven by ScriptedModel: results, events, limits, stop reasons, failures,
structured output and tracing (turns.md §2-§7, §18; features.md §1, §5, §6, §17)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import BaseModel

from dive.agent import (
    Agent,
    AgentEvent,
    Limits,
    MessageEvent,
    ToolCallEvent,
    ToolCallResultEvent,
    TurnEndedEvent,
)
from dive.agent._agent import REMINDER_RULE
from dive.agent._loop import FINAL_ANSWER_TEXT
from dive.errors import (
    OutputUnavailableError,
    OutputValidationError,
    StreamInterruptedError,
    TurnError,
    UserError,
)
from dive.llm import ModelRequest, ModelResponse, Usage
from dive.messages import Message, TextBlock, ToolCall, ToolResult, validate_complete_turns
from dive.testing import ScriptedModel, Step, call, text, tool_use
from dive.tracing import (
    AgentRunInfo,
    AgentRunSpan,
    ChatInfo,
    ChatSpan,
    MultiTracer,
    ToolCallInfo,
    ToolSpan,
)
from dive.turns import NOT_RUN_TEXT, Reminder, find_latest_reminder, find_latest_turn_outcome

# --- helpers ----------------------------------------------------------------------------------


class Counter:
    """Counts calls of the test tools."""

    def __init__(self) -> None:
        self.calls: list[str] = []


def make_tools(counter: Counter) -> list[Any]:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        counter.calls.append("add")
        return a + b

    def echo(value: str) -> str:
        """Echo a value."""
        counter.calls.append("echo")
        return value

    return [add, echo]


def results_of(messages: tuple[Message, ...] | list[Message]) -> list[ToolResult]:
    return [m.tool_result for m in messages if m.tool_result is not None]


def result_text(r: ToolResult) -> str:
    return "".join(b.text for b in r.content if isinstance(b, TextBlock))


def texts(messages: tuple[Message, ...] | list[Message]) -> list[str]:
    return [m.text for m in messages]


class Collector:
    """An on_event handler that keeps every event."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    async def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)

    def types(self, *, raw: bool = False) -> list[str]:
        return [e.type for e in self.events if raw or e.type != "model_event"]


# --- completed path ---------------------------------------------------------------------------


async def test_completed_basics() -> None:
    counter = Counter()
    first = tool_use(call("add", {"a": 1, "b": 2}), usage=Usage(input_tokens=10, output_tokens=3))
    second = text("The sum is 3.", usage=Usage(input_tokens=20, output_tokens=5))
    model = ScriptedModel([first, second])
    agent = Agent(model=model, tools=make_tools(counter))
    result = await agent.run("what is 1 + 2?")

    assert result.status == "completed"
    assert result.error is None
    assert result.outcome is None
    assert result.output_text == "The sum is 3."
    assert counter.calls == ["add"]
    validate_complete_turns(result.turn.messages)
    assert result.output_messages == result.turn.messages
    assert [m.role for m in result.turn.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.turn.messages[0].text == "what is 1 + 2?"
    tr = results_of(result.turn.messages)
    assert len(tr) == 1
    assert result_text(tr[0]) == "3"
    assert not tr[0].is_error

    expected = first.usage + second.usage
    assert result.usage.input_tokens == 30 == expected.input_tokens
    assert result.usage.output_tokens == 8 == expected.output_tokens
    assert result.turn.usage.input_tokens == 30
    assert result.turn.model_calls == 2
    assert result.turn.executed_tool_calls == 1
    assert result.stop_reason == "end_turn"
    assert result.model == "scripted"
    assert len(model.requests) == 2
    model.assert_consumed()


async def test_usage_is_sum_of_scripted_usages() -> None:
    script = [
        tool_use(call("echo", {"value": "x"})),
        tool_use(call("echo", {"value": "y"}), text="again"),
        text("done"),
    ]
    expected = script[0].usage + script[1].usage + script[2].usage
    model = ScriptedModel(script)
    result = await Agent(model=model, tools=make_tools(Counter())).run("go")
    assert result.usage == expected
    assert result.usage.output_tokens == expected.output_tokens
    assert result.usage.input_tokens == expected.input_tokens
    assert result.usage.requests == expected.requests == 3
    assert result.turn.model_calls == 3
    message_usages = [e.usage for e in result.items if isinstance(e, MessageEvent)]
    assert [u.output_tokens for u in message_usages] == [s.usage.output_tokens for s in script]


async def test_output_text_joins_passages_after_last_tool_result() -> None:
    model = ScriptedModel([tool_use(call("echo", {"value": "x"}), text="calling"), text("final")])
    result = await Agent(model=model, tools=make_tools(Counter())).run("go")
    assert result.output_text == "final"


# --- system prompt and reminders --------------------------------------------------------------


async def test_system_prompt_has_instructions_and_priming_rule() -> None:
    model = ScriptedModel([text("ok")])
    await Agent(model=model, instructions="Be terse.").run("hi")
    system = model.requests[0].system
    assert system.startswith("Be terse.")
    assert REMINDER_RULE in system
    assert "<system-reminder>" in system


async def test_prime_reminders_false_omits_rule() -> None:
    model = ScriptedModel([text("ok")])
    await Agent(model=model, instructions="Be terse.", prime_reminders=False).run("hi")
    assert model.requests[0].system == "Be terse."
    assert "system-reminder" not in model.requests[0].system


async def test_run_reminders_are_model_only() -> None:
    model = ScriptedModel([tool_use(call("echo", {"value": "x"})), text("ok")])
    agent = Agent(model=model, tools=make_tools(Counter()))
    reminder = Reminder(name="clock", content="It is noon.")
    result = await agent.run("hi", reminders=[reminder])
    for request in model.requests:
        assert find_latest_reminder(request.messages, "clock") == reminder
    assert find_latest_reminder(result.turn.messages, "clock") is None
    assert all("It is noon." not in m.text for m in result.turn.messages)


# --- events -----------------------------------------------------------------------------------


async def test_event_order_and_single_turn_ended() -> None:
    collector = Collector()
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2})), text("3")])
    result = await Agent(model=model, tools=make_tools(Counter())).run("hi", on_event=collector)
    assert collector.types() == [
        "message",
        "tool_call",
        "tool_call_result",
        "message",
        "turn_ended",
    ]
    assert isinstance(collector.events[-1], TurnEndedEvent)
    assert collector.events[-1].turn.id == result.turn.id
    assert sum(isinstance(e, TurnEndedEvent) for e in collector.events) == 1
    assert not any(isinstance(e, TurnEndedEvent) for e in result.items)
    assert [e.type for e in result.items] == [
        "message",
        "tool_call",
        "tool_call_result",
        "message",
    ]
    # raw deltas reach the handler but are not kept in items
    assert "model_event" in collector.types(raw=True)
    call_ev = next(e for e in result.items if isinstance(e, ToolCallEvent))
    res_ev = next(e for e in result.items if isinstance(e, ToolCallResultEvent))
    assert call_ev.call.id == res_ev.call.id
    assert res_ev.state == "completed"
    assert result.tool_call_results() == [res_ev]


async def test_turn_ended_emitted_once_on_incomplete_turn() -> None:
    collector = Collector()
    model = ScriptedModel([Step(raise_before=RuntimeError("boom"))])
    result = await Agent(model=model).run("hi", on_event=collector)
    assert result.status == "incomplete"
    assert collector.types() == ["turn_ended"]
    assert result.items == ()


async def test_stream_yields_events_and_result() -> None:
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2})), text("3")])
    agent = Agent(model=model, tools=make_tools(Counter()))
    stream = agent.stream("hi")
    seen: list[AgentEvent] = [ev async for ev in stream]
    kinds = [e.type for e in seen if e.type != "model_event"]
    assert kinds == ["message", "tool_call", "tool_call_result", "message", "turn_ended"]
    assert isinstance(seen[-1], TurnEndedEvent)
    result = stream.result
    assert result.status == "completed"
    assert result.output_text == "3"
    assert seen[-1].turn.id == result.turn.id
    assert [e.type for e in result.items] == kinds[:-1]


async def test_stream_result_before_iteration_raises() -> None:
    stream = Agent(model=ScriptedModel([text("x")])).stream("hi")
    with pytest.raises(UserError):
        _ = stream.result


def test_run_sync_from_sync_code() -> None:
    model = ScriptedModel([text("hello")])
    result = Agent(model=model).run_sync("hi")
    assert result.status == "completed"
    assert result.output_text == "hello"


async def test_run_sync_inside_running_loop_raises() -> None:
    model = ScriptedModel([text("hello")])
    with pytest.raises(UserError, match="running event loop"):
        Agent(model=model).run_sync("hi")
    assert model.requests == []


# --- limits per turn --------------------------------------------------------------------------


async def test_force_final_answer_on_last_allowed_call() -> None:
    counter = Counter()
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2})), text("3")])
    agent = Agent(model=model, tools=make_tools(counter), limits=Limits(max_model_calls_per_turn=2))
    result = await agent.run("hi")
    assert result.status == "completed"
    assert counter.calls == ["add"]
    first, last = model.requests
    assert first.tool_choice is None or first.tool_choice.type != "none"
    assert last.tool_choice is not None
    assert last.tool_choice.type == "none"
    assert FINAL_ANSWER_TEXT in texts(list(last.messages))
    assert FINAL_ANSWER_TEXT in texts(result.turn.messages)
    assert (
        FINAL_ANSWER_TEXT
        == "Your tool calls are complete. You must respond with a final answer now."
    )
    validate_complete_turns(result.turn.messages)


async def test_force_final_answer_false_omits_text_and_tool_choice() -> None:
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2})), text("3")])
    agent = Agent(
        model=model,
        tools=make_tools(Counter()),
        limits=Limits(max_model_calls_per_turn=2, force_final_answer=False),
    )
    result = await agent.run("hi")
    assert result.status == "completed"
    last = model.requests[-1]
    assert last.tool_choice is None
    assert FINAL_ANSWER_TEXT not in texts(list(last.messages))


async def test_tool_calls_on_last_allowed_call_end_iteration_limit() -> None:
    counter = Counter()
    model = ScriptedModel(
        [
            tool_use(call("add", {"a": 1, "b": 2})),
            tool_use(call("add", {"a": 3, "b": 4}, id="late")),
        ]
    )
    agent = Agent(model=model, tools=make_tools(counter), limits=Limits(max_model_calls_per_turn=2))
    collector = Collector()
    result = await agent.run("hi", on_event=collector)
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "iteration_limit"
    assert result.outcome.next == "continue"
    assert result.error is None
    assert counter.calls == ["add"]  # the late call never ran
    late = [r for r in results_of(result.turn.messages) if r.tool_call_id == "late"]
    assert len(late) == 1
    assert late[0].is_error
    assert result_text(late[0]) == NOT_RUN_TEXT
    assert [(c.id, c.state) for c in result.outcome.tool_calls] == [("late", "not_started")]
    validate_complete_turns(result.turn.messages)


async def test_max_tool_calls_per_turn_exceeded_runs_none() -> None:
    counter = Counter()
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2}), call("echo", {"value": "x"}))])
    agent = Agent(model=model, tools=make_tools(counter), limits=Limits(max_tool_calls_per_turn=1))
    result = await agent.run("hi")
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "iteration_limit"
    assert counter.calls == []
    assert result.turn.executed_tool_calls == 0
    rs = results_of(result.turn.messages)
    assert len(rs) == 2
    assert all(r.is_error and result_text(r) == NOT_RUN_TEXT for r in rs)
    validate_complete_turns(result.turn.messages)


async def test_max_tool_calls_per_turn_counts_across_batches() -> None:
    counter = Counter()
    model = ScriptedModel(
        [
            tool_use(call("add", {"a": 1, "b": 2})),
            tool_use(call("echo", {"value": "x"})),
        ]
    )
    agent = Agent(model=model, tools=make_tools(counter), limits=Limits(max_tool_calls_per_turn=1))
    result = await agent.run("hi")
    assert result.outcome is not None
    assert result.outcome.reason == "iteration_limit"
    assert counter.calls == ["add"]
    assert result.turn.executed_tool_calls == 1


# --- stop reasons -----------------------------------------------------------------------------


async def test_max_tokens_with_truncated_tool_use_is_output_limit() -> None:
    counter = Counter()
    response = ModelResponse(
        content=(
            TextBlock(text="working"),
            ToolCall(id="ok", name="add", arguments={"a": 1, "b": 2}),
            ToolCall(id="cut", name="add", raw_arguments='{"a": 1, "b"'),
        ),
        stop_reason="max_tokens",
    )
    model = ScriptedModel([response])
    result = await Agent(model=model, tools=make_tools(counter)).run("hi")
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "output_limit"
    assert result.outcome.next == "continue"
    assert result.error is None
    assert counter.calls == []
    messages = result.turn.messages
    validate_complete_turns(messages)
    all_calls = [c for m in messages for c in m.tool_calls]
    assert [c.id for c in all_calls] == ["ok"]  # the truncated call is dropped
    assert all(c.raw_arguments is None for c in all_calls)
    rs = results_of(messages)
    assert [(r.tool_call_id, result_text(r), r.is_error) for r in rs] == [
        ("ok", NOT_RUN_TEXT, True)
    ]
    assert [(c.id, c.state) for c in result.outcome.tool_calls] == [("ok", "not_started")]
    assert result.stop_reason == "max_tokens"


async def test_context_limit_stop_reason() -> None:
    model = ScriptedModel([text("partial", stop_reason="model_context_window_exceeded")])
    result = await Agent(model=model).run("hi")
    assert result.outcome is not None
    assert result.outcome.reason == "context_limit"
    assert result.outcome.next == "input"


async def test_refusal_is_completed_with_calls_not_run() -> None:
    counter = Counter()
    model = ScriptedModel(
        [tool_use(call("add", {"a": 1, "b": 2}), text="I won't", stop_reason="refusal")]
    )
    result = await Agent(model=model, tools=make_tools(counter)).run("hi")
    assert result.status == "completed"
    assert result.outcome is None
    assert result.error is None
    assert result.stop_reason == "refusal"
    assert counter.calls == []
    messages = result.turn.messages
    validate_complete_turns(messages)
    rs = results_of(messages)
    assert len(rs) == 1
    assert rs[0].is_error
    assert result_text(rs[0]) == NOT_RUN_TEXT
    assert find_latest_reminder(messages, "turn-incomplete") is None
    assert find_latest_turn_outcome(messages) is None


async def test_unknown_stop_reason_with_calls_is_provider_stopped() -> None:
    counter = Counter()
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2}), stop_reason="weird_reason")])
    result = await Agent(model=model, tools=make_tools(counter)).run("hi")
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_stopped"
    assert result.outcome.error == "weird_reason"
    assert result.error is None
    assert counter.calls == []
    validate_complete_turns(result.turn.messages)
    assert [result_text(r) for r in results_of(result.turn.messages)] == [NOT_RUN_TEXT]


async def test_unknown_stop_reason_text_only_is_completed() -> None:
    model = ScriptedModel([text("fine", stop_reason="weird_reason")])
    result = await Agent(model=model).run("hi")
    assert result.status == "completed"
    assert result.output_text == "fine"


async def test_incomplete_stop_kind_is_provider_stopped() -> None:
    model = ScriptedModel([text("", stop_reason="malformed_function_call")])
    result = await Agent(model=model).run("hi")
    assert result.outcome is not None
    assert result.outcome.reason == "provider_stopped"
    assert result.outcome.error == "malformed_function_call"


# --- failures ---------------------------------------------------------------------------------


async def test_on_event_handler_raising_is_callback_error() -> None:
    async def handler(event: AgentEvent) -> None:
        if event.type == "message":
            raise ValueError("handler broke")

    model = ScriptedModel([text("hi there")])
    result = await Agent(model=model).run("hi", on_event=handler)
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "callback_error"
    assert result.outcome.next == "continue"
    assert result.error is not None
    validate_complete_turns(result.turn.messages)


async def test_model_raising_before_stream_is_provider_error() -> None:
    model = ScriptedModel([Step(raise_before=RuntimeError("boom"))])
    result = await Agent(model=model).run("hi")
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    assert result.outcome.next == "continue"
    assert isinstance(result.error, RuntimeError)
    assert str(result.error) == "boom"
    assert result.outcome.error == "boom"
    assert [m.role for m in result.turn.messages] == ["user", "user"]
    assert result.turn.messages[0].text == "hi"


async def test_stream_cut_after_content_is_stream_interrupted() -> None:
    model = ScriptedModel([Step(response=text("hello world, partial answer"), cut_after=3)])
    result = await Agent(model=model).run("hi")
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "stream_interrupted"
    assert result.outcome.usage_unknown
    assert isinstance(result.error, StreamInterruptedError)
    messages = result.turn.messages
    validate_complete_turns(messages)
    assert messages[-2].role == "assistant"
    assert messages[-2].text != ""
    assert "hello world, partial answer".startswith(messages[-2].text)
    assert find_latest_turn_outcome(messages) == result.outcome


async def test_incomplete_turn_ends_with_outcome_note() -> None:
    model = ScriptedModel([Step(raise_before=RuntimeError("boom"))])
    result = await Agent(model=model).run("hi")
    last = result.turn.messages[-1]
    assert last.role == "user"
    note = find_latest_reminder(result.turn.messages, "turn-incomplete")
    assert note is not None
    assert last.text.startswith('<system-reminder name="turn-incomplete">')
    found = find_latest_turn_outcome(result.turn.messages)
    assert found is not None
    assert found == result.outcome
    assert found.reason == "provider_error"


async def test_raise_for_status() -> None:
    model = ScriptedModel([Step(raise_before=RuntimeError("boom"))])
    result = await Agent(model=model).run("hi")
    with pytest.raises(TurnError) as info:
        result.raise_for_status()
    assert info.value.result is result
    ok = await Agent(model=ScriptedModel([text("x")])).run("hi")
    ok.raise_for_status()


# --- structured output ------------------------------------------------------------------------


class Answer(BaseModel):
    city: str
    population: int


async def test_structured_output_valid() -> None:
    model = ScriptedModel([tool_use(call("submit_result", {"city": "Oslo", "population": 700000}))])
    agent = Agent(model=model, output_type=Answer)
    result = await agent.run("biggest city in Norway?")
    assert result.status == "completed"
    assert isinstance(result.output, Answer)
    assert result.output == Answer(city="Oslo", population=700000)
    assert "submit_result" in [d.name for d in model.requests[0].tools]
    validate_complete_turns(result.turn.messages)
    model.assert_consumed()


async def test_structured_output_invalid_then_valid() -> None:
    model = ScriptedModel(
        [
            tool_use(call("submit_result", {"city": "Oslo", "population": "many"})),
            tool_use(call("submit_result", {"city": "Oslo", "population": 700000})),
        ]
    )
    result = await Agent(model=model, output_type=Answer).run("q")
    assert result.status == "completed"
    assert result.output == Answer(city="Oslo", population=700000)
    rs = results_of(result.turn.messages)
    assert rs[0].is_error
    assert "population" in result_text(rs[0])
    # the model saw the validation problem on its second try
    second = results_of(list(model.requests[1].messages))
    assert second[-1].is_error
    assert "population" in result_text(second[-1])


async def test_structured_output_retries_exhausted() -> None:
    model = ScriptedModel(
        [
            tool_use(call("submit_result", {"city": "Oslo"})),
            tool_use(call("submit_result", {"population": 1})),
        ]
    )
    result = await Agent(model=model, output_type=Answer).run("q")
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "error"
    assert isinstance(result.error, OutputValidationError)
    assert not result.has_output
    with pytest.raises(OutputUnavailableError, match=r"incomplete \(error\)"):
        _ = result.output
    validate_complete_turns(result.turn.messages)
    model.assert_consumed()


async def test_structured_output_retries_configurable() -> None:
    bad = {"city": "Oslo"}
    model = ScriptedModel(
        [
            tool_use(call("submit_result", bad)),
            tool_use(call("submit_result", bad)),
            tool_use(call("submit_result", {"city": "Oslo", "population": 2})),
        ]
    )
    result = await Agent(model=model, output_type=Answer, output_retries=2).run("q")
    assert result.status == "completed"
    assert result.output == Answer(city="Oslo", population=2)


async def test_structured_output_text_answer_counts_as_failure() -> None:
    model = ScriptedModel(
        [
            text("Oslo, about 700k"),
            tool_use(call("submit_result", {"city": "Oslo", "population": 700000})),
        ]
    )
    result = await Agent(model=model, output_type=Answer).run("q")
    assert result.status == "completed"
    assert result.output == Answer(city="Oslo", population=700000)
    second_request = model.requests[1]
    assert any("submit_result" in m.text for m in second_request.messages if m.role == "user")


async def test_structured_output_text_answers_exhaust_retries() -> None:
    model = ScriptedModel([text("Oslo"), text("Still Oslo")])
    result = await Agent(model=model, output_type=Answer).run("q")
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "error"
    assert isinstance(result.error, OutputValidationError)


# --- tracer -----------------------------------------------------------------------------------


@dataclass
class RunSpanRec:
    info: AgentRunInfo
    ends: list[BaseException | None] = field(default_factory=lambda: [])
    responses: list[tuple[str, str | None, str | None]] = field(default_factory=lambda: [])
    usages: list[Usage] = field(default_factory=lambda: [])

    def set_response(self, status: str, reason: str | None, next_step: str | None) -> None:
        self.responses.append((status, reason, next_step))

    def set_usage(self, usage: Usage) -> None:
        self.usages.append(usage)

    def end(self, error: BaseException | None = None) -> None:
        self.ends.append(error)


@dataclass
class ChatSpanRec:
    info: ChatInfo
    ends: list[BaseException | None] = field(default_factory=lambda: [])
    responses: list[ModelResponse] = field(default_factory=lambda: [])
    ttfc: list[float] = field(default_factory=lambda: [])

    def set_response(self, response: ModelResponse) -> None:
        self.responses.append(response)

    def set_time_to_first_chunk(self, seconds: float) -> None:
        self.ttfc.append(seconds)

    def end(self, error: BaseException | None = None) -> None:
        self.ends.append(error)


@dataclass
class ToolSpanRec:
    info: ToolCallInfo
    ends: list[BaseException | None] = field(default_factory=lambda: [])
    results: list[ToolResult] = field(default_factory=lambda: [])

    def set_result(self, result: ToolResult) -> None:
        self.results.append(result)

    def end(self, error: BaseException | None = None) -> None:
        self.ends.append(error)


class RecordingTracer:
    def __init__(self) -> None:
        self.runs: list[RunSpanRec] = []
        self.chats: list[ChatSpanRec] = []
        self.tools: list[ToolSpanRec] = []

    def start_agent_run(self, info: AgentRunInfo) -> AgentRunSpan:
        span = RunSpanRec(info)
        self.runs.append(span)
        return span

    def start_chat(self, info: ChatInfo) -> ChatSpan:
        span = ChatSpanRec(info)
        self.chats.append(span)
        return span

    def start_tool_call(self, info: ToolCallInfo) -> ToolSpan:
        span = ToolSpanRec(info)
        self.tools.append(span)
        return span


def _traced_script() -> list[ModelResponse]:
    return [
        tool_use(call("add", {"a": 1, "b": 2}), call("echo", {"value": "v"})),
        tool_use(call("nope", {})),  # unknown tool: not executed, no tool span
        text("done"),
    ]


def _check_tracer(tracer: RecordingTracer, result_turn_id: str) -> None:
    assert len(tracer.runs) == 1
    run = tracer.runs[0]
    assert run.info.turn_id == result_turn_id
    assert run.info.agent_name == "tracy"
    assert run.ends == [None]
    assert run.responses == [("completed", None, None)]
    assert len(run.usages) == 1
    assert len(tracer.chats) == 3
    assert [c.info.iteration for c in tracer.chats] == [0, 1, 2]
    assert all(c.ends == [None] for c in tracer.chats)
    assert all(len(c.responses) == 1 for c in tracer.chats)
    assert len(tracer.tools) == 2
    assert [t.info.call.name for t in tracer.tools] == ["add", "echo"]
    assert all(t.ends == [None] for t in tracer.tools)
    assert all(len(t.results) == 1 for t in tracer.tools)


async def test_recording_tracer_sees_every_step() -> None:
    tracer = RecordingTracer()
    model = ScriptedModel(_traced_script())
    agent = Agent(model=model, tools=make_tools(Counter()), tracer=tracer, name="tracy")
    result = await agent.run("hi")
    assert result.status == "completed"
    _check_tracer(tracer, result.turn.id)


async def test_tracer_tool_is_error_is_span_success() -> None:
    def fail() -> str:
        """Always fails."""
        raise RuntimeError("nope")

    tracer = RecordingTracer()
    model = ScriptedModel([tool_use(call("fail", {})), text("ok")])
    result = await Agent(model=model, tools=[fail], tracer=tracer).run("hi")
    assert result.status == "completed"
    assert len(tracer.tools) == 1
    assert tracer.tools[0].ends == [None]
    assert tracer.tools[0].results[0].is_error


async def test_tracer_failed_model_call_and_incomplete_run() -> None:
    tracer = RecordingTracer()
    model = ScriptedModel([Step(raise_before=RuntimeError("boom"))])
    result = await Agent(model=model, tracer=tracer).run("hi")
    assert result.status == "incomplete"
    assert len(tracer.chats) == 1
    assert len(tracer.chats[0].ends) == 1
    assert tracer.chats[0].ends[0] is not None
    assert len(tracer.runs) == 1
    assert tracer.runs[0].ends == [result.error]
    assert tracer.runs[0].responses == [("incomplete", "provider_error", "continue")]


async def test_multi_tracer_fans_out_and_drops_none() -> None:
    a, b = RecordingTracer(), RecordingTracer()
    multi = MultiTracer(a, None, b)
    assert multi.tracers == (a, b)
    model = ScriptedModel(_traced_script())
    agent = Agent(model=model, tools=make_tools(Counter()), tracer=multi, name="tracy")
    result = await agent.run("hi")
    _check_tracer(a, result.turn.id)
    _check_tracer(b, result.turn.id)


# --- misc -------------------------------------------------------------------------------------


async def test_model_request_carries_tools_and_input() -> None:
    model = ScriptedModel([text("ok")])
    await Agent(model=model, tools=make_tools(Counter())).run("hi")
    request: ModelRequest = model.requests[0]
    assert {d.name for d in request.tools} == {"add", "echo"}
    assert [m.text for m in request.messages] == ["hi"]


async def test_non_streaming_model_runs_same_loop() -> None:
    model = ScriptedModel([tool_use(call("add", {"a": 2, "b": 2})), text("4")], streaming=False)
    collector = Collector()
    result = await Agent(model=model, tools=make_tools(Counter())).run("hi", on_event=collector)
    assert result.status == "completed"
    assert result.output_text == "4"
    assert "model_event" not in collector.types(raw=True)


async def test_history_is_sent_but_not_saved() -> None:
    history = [Message.user("earlier"), Message.assistant("reply")]
    model = ScriptedModel([text("ok")])
    result = await Agent(model=model).run("now", history=history)
    assert [m.text for m in model.requests[0].messages] == ["earlier", "reply", "now"]
    assert [m.text for m in result.turn.messages] == ["now", "ok"]


async def test_concurrent_runs_are_independent() -> None:
    agent_a = Agent(model=ScriptedModel([text("a")]))
    agent_b = Agent(model=ScriptedModel([text("b")]))
    ra, rb = await asyncio.gather(agent_a.run("x"), agent_b.run("y"))
    assert (ra.output_text, rb.output_text) == ("a", "b")


async def test_prompt_cache_key_is_stable_per_session_and_never_the_raw_id() -> None:
    from dive.sessions import MemorySessionStore

    store = MemorySessionStore()
    model = ScriptedModel([text("a"), text("b"), text("c")])
    agent = Agent(model=model)
    await agent.run("one", session=store.session("user-42"))
    await agent.run("two", session=store.session("user-42"))
    await agent.run("three")
    keys = [r.prompt_cache_key for r in model.requests]
    assert keys[0] == keys[1]
    assert keys[0] is not None
    assert keys[0].startswith("dive-session-")
    assert "user-42" not in keys[0]
    assert keys[2] is not None
    assert keys[2].startswith("dive-agent-")
