"""The Anthropic provider end to end: ``AnthropicModel`` through the real ``anthropic`` SDK against
``AnthropicSimulator`` (wire-apis.md Part A; turns.md §4, §6; features.md §7 Anthropic, Retries).

Every test drives real HTTP: dive builds the request, the SDK sends it, the simulator validates it
(tool pairing, thinking signatures, cache breakpoints) and answers from its script; the request
bodies it recorded are the golden evidence.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

import pytest

from dive.agent import Agent, Limits, MessageEvent, RunResult
from dive.agent._loop import FINAL_ANSWER_TEXT
from dive.errors import (
    AuthenticationError,
    InvalidRequestError,
    OverloadedError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitedError,
    StreamInterruptedError,
    UnsupportedSettingError,
)
from dive.llm import (
    ModelRequest,
    ModelSettings,
    ToolChoice,
    Usage,
    collect,
)
from dive.messages import (
    CacheControl,
    Message,
    RedactedThinkingBlock,
    ServerToolCall,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolDefinition,
    ToolResult,
    validate_complete_turns,
)
from dive.providers._retry import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.testing.anthropic import (
    AnthropicSimulator,
    ScriptItem,
    SimCut,
    SimFault,
    SimReply,
    SimStreamError,
    redacted_thinking_block,
    reply,
    server_tool_use_block,
    simulator,
    text,
    text_block,
    thinking_block,
    tool_use,
    tool_use_block,
)
from dive.turns import NOT_RUN_TEXT
from tests._events import Events

MODEL = "claude-sonnet-4-6"  # not deprecated in the installed SDK; cache minimum 2048 tokens
ADAPTIVE_MODEL = "claude-opus-4-7"  # adaptive-only thinking, effort up to max, no temperature
FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
EPHEMERAL = {"type": "ephemeral"}
ANSWER = "Hello from the model."
Json = dict[str, Any]

STREAMING = pytest.mark.parametrize("streaming", [True, False], ids=["stream", "json"])


# --- helpers ----------------------------------------------------------------------------------


_OPEN: list[AnthropicModel] = []


@pytest.fixture
async def sim() -> AsyncIterator[AnthropicSimulator]:
    """A simulator whose script must be used up; the models made against it are closed after."""
    with simulator(assert_consumed=True) as s:
        try:
            yield s
        finally:
            while _OPEN:  # AnthropicModel has no close(): close its SDK client directly
                await _OPEN.pop()._client.close()


def make_model(
    sim: AnthropicSimulator,
    *,
    name: str = MODEL,
    streaming: bool = True,
    retry: RetryPolicy = FAST,
) -> AnthropicModel:
    model = AnthropicModel(name, base_url=sim.url, api_key="test", retry=retry, streaming=streaming)
    _OPEN.append(model)
    return model


class Calls:
    """Records the test tools' executions."""

    def __init__(self) -> None:
        self.log: list[str] = []

    def tools(self) -> list[Any]:
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            self.log.append(f"add({a},{b})")
            return a + b

        def echo(value: str) -> str:
            """Echo a value."""
            self.log.append(f"echo({value})")
            return value

        return [add, echo]


def bodies(sim: AnthropicSimulator) -> list[Json]:
    """The JSON bodies of the recorded ``POST /v1/messages`` requests."""
    return [r.body for r in sim.message_requests]


def strip_cc(value: Any) -> Any:
    """``value`` with every ``cache_control`` key removed (recursively)."""
    if isinstance(value, dict):
        items = cast(dict[str, Any], value).items()
        return {k: strip_cc(v) for k, v in items if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cc(v) for v in cast(list[Any], value)]
    return value


def markers(body: Json) -> list[tuple[str, int, int]]:
    """Where the request's cache markers sit: (tier, index, block index)."""
    out: list[tuple[str, int, int]] = []
    for i, tool in enumerate(body.get("tools") or []):
        if "cache_control" in tool:
            out.append(("tools", i, 0))
    for i, block in enumerate(body.get("system") or []):
        if "cache_control" in block:
            out.append(("system", i, 0))
    for i, message in enumerate(body["messages"]):
        content: Any = message["content"]
        blocks = cast(list[Json], content) if isinstance(content, list) else []
        for j, block in enumerate(blocks):
            if "cache_control" in block:
                out.append(("messages", i, j))
    return out


def message_usages(result: RunResult[Any]) -> list[Usage]:
    """The per-call usage of each model call, from the ``message`` events."""
    return [e.usage for e in result.items if isinstance(e, MessageEvent)]


def texts_of(messages: Sequence[Message], role: str = "assistant") -> list[str]:
    return [m.text for m in messages if m.role == role]


def tool_results(messages: Sequence[Message]) -> list[ToolResult]:
    return [m.tool_result for m in messages if m.tool_result is not None]


def result_text(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextBlock))


def tool_result_blocks(message: Json) -> list[Json]:
    return [b for b in message["content"] if b["type"] == "tool_result"]


# --- the tool loop ----------------------------------------------------------------------------


@STREAMING
async def test_tool_loop_completes_with_valid_history_and_summed_usage(
    sim: AnthropicSimulator, streaming: bool
) -> None:
    calls = Calls()
    sim.add(
        reply(
            blocks=[
                text_block("Let me compute."),
                tool_use_block("add", {"a": 1, "b": 2}),
                tool_use_block("echo", {"value": "x"}),
            ]
        ),
        tool_use("add", {"a": 3, "b": 4}),
        text("The answer is 7."),
    )
    agent = Agent(model=make_model(sim, streaming=streaming), tools=calls.tools())
    result = await agent.run("compute")

    assert result.status == "completed"
    assert result.error is None
    assert result.outcome is None
    assert result.output_text == "The answer is 7."
    assert calls.log == ["add(1,2)", "echo(x)", "add(3,4)"]
    validate_complete_turns(result.turn.messages)
    assert [m.role for m in result.turn.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert [result_text(r) for r in tool_results(result.turn.messages)] == ["3", "x", "7"]
    assert result.stop_reason == "end_turn"
    assert result.model == MODEL

    per_call = message_usages(result)
    assert len(per_call) == 3
    assert all(u.output_tokens > 0 and u.total_input_tokens > 0 for u in per_call)
    assert all(u.cost is not None for u in per_call)
    assert result.usage.requests == 3
    assert result.usage.input_tokens == sum(u.input_tokens for u in per_call)
    assert result.usage.output_tokens == sum(u.output_tokens for u in per_call)
    assert result.usage.cache_creation_input_tokens == sum(
        u.cache_creation_input_tokens for u in per_call
    )
    assert result.usage.cache_read_input_tokens == sum(u.cache_read_input_tokens for u in per_call)
    assert result.usage.cost is not None
    assert result.usage.cost > 0
    assert result.usage.cost == pytest.approx(sum(u.cost or 0.0 for u in per_call))
    assert result.turn.usage.output_tokens == result.usage.output_tokens

    sent = bodies(sim)
    assert len(sent) == 3
    assert all(b["model"] == MODEL for b in sent)
    assert all(b.get("stream", False) is streaming for b in sent)
    # Request 2: the two results of response 1 are one user message, in call order.
    second = sent[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    first_calls = [b for b in second[1]["content"] if b["type"] == "tool_use"]
    assert [b["name"] for b in first_calls] == ["add", "echo"]
    results = strip_cc(second[2]["content"])
    assert results == [
        {"type": "tool_result", "tool_use_id": first_calls[0]["id"], "content": [text_block("3")]},
        {"type": "tool_result", "tool_use_id": first_calls[1]["id"], "content": [text_block("x")]},
    ]
    # Request 3 replays request 2's messages, then the new call and its result.
    third = sent[2]["messages"]
    assert strip_cc(third[:3]) == strip_cc(second)
    assert [m["role"] for m in third] == ["user", "assistant", "user", "assistant", "user"]
    assert [b["type"] for b in third[4]["content"]] == ["tool_result"]


async def test_results_come_first_when_text_shares_their_user_message(
    sim: AnthropicSimulator,
) -> None:
    """The final-answer nudge is user text after the results: one user message, results first."""
    calls = Calls()
    sim.add(
        reply(
            blocks=[tool_use_block("add", {"a": 1, "b": 1}), tool_use_block("echo", {"value": "v"})]
        ),
        text("Final."),
    )
    agent = Agent(
        model=make_model(sim),
        tools=calls.tools(),
        limits=Limits(max_model_calls_per_turn=2),
    )
    result = await agent.run("go")

    assert result.status == "completed"
    validate_complete_turns(result.turn.messages)
    last = bodies(sim)[1]
    assert last["tool_choice"] == {"type": "none"}
    user = strip_cc(last["messages"][-1])
    assert user["role"] == "user"
    assert [b["type"] for b in user["content"]] == ["tool_result", "tool_result", "text"]
    assert user["content"][2]["text"] == FINAL_ANSWER_TEXT


async def test_parallel_tool_results_go_back_in_call_order(sim: AnthropicSimulator) -> None:
    finished: list[str] = []
    second_done = asyncio.Event()

    async def first(tag: str) -> str:
        """Finishes only after ``second`` (so completion order differs from call order)."""
        await asyncio.wait_for(second_done.wait(), timeout=5)
        finished.append("first")
        return f"first:{tag}"

    async def second(tag: str) -> str:
        """Finishes at once."""
        finished.append("second")
        second_done.set()
        return f"second:{tag}"

    async def third(tag: str) -> str:
        """Finishes at once."""
        await asyncio.sleep(0)
        finished.append("third")
        return f"third:{tag}"

    sim.add(
        reply(
            blocks=[
                tool_use_block("first", {"tag": "a"}),
                tool_use_block("second", {"tag": "b"}),
                tool_use_block("third", {"tag": "c"}),
            ]
        ),
        text("All done."),
    )
    agent = Agent(model=make_model(sim), tools=[first, second, third], parallel_tool_execution=True)
    result = await agent.run("go")

    assert result.status == "completed"
    assert finished[-1] == "first"  # really ran concurrently and finished out of order
    validate_complete_turns(result.turn.messages)
    sent = bodies(sim)
    call_ids = [b["id"] for b in sent[1]["messages"][1]["content"] if b["type"] == "tool_use"]
    results = tool_result_blocks(sent[1]["messages"][2])
    assert len(sent[1]["messages"]) == 3
    assert [r["tool_use_id"] for r in results] == call_ids
    assert [r["content"][0]["text"] for r in results] == ["first:a", "second:b", "third:c"]


# --- thinking ---------------------------------------------------------------------------------

THINKING = ModelSettings(thinking="enabled", reasoning_budget=2048, max_tokens=8000)
LONG_THOUGHT = "I should add one and two first, then check the result carefully."


@STREAMING
async def test_thinking_signatures_and_redacted_thinking_round_trip(
    sim: AnthropicSimulator, streaming: bool
) -> None:
    calls = Calls()
    sim.add(
        reply(
            blocks=[
                thinking_block(LONG_THOUGHT),  # signed by the simulator
                text_block("Adding."),
                tool_use_block("add", {"a": 1, "b": 2}),
            ]
        ),
        reply(
            blocks=[
                redacted_thinking_block("EmwKAhgBEgy3va3pzix/LafPsn4a"),
                tool_use_block("add", {"a": 3, "b": 4}),
            ]
        ),
        text("Done: 7."),
    )
    agent = Agent(
        model=make_model(sim, streaming=streaming),
        tools=calls.tools(),
        model_settings=THINKING,
    )
    result = await agent.run("think, then add")

    # The simulator rejects an edited or unsigned thinking block with a 400: none came.
    assert result.status == "completed", result.error
    assert calls.log == ["add(1,2)", "add(3,4)"]
    validate_complete_turns(result.turn.messages)

    thinking = [b for m in result.turn.messages for b in m.content if isinstance(b, ThinkingBlock)]
    redacted = [
        b for m in result.turn.messages for b in m.content if isinstance(b, RedactedThinkingBlock)
    ]
    assert len(thinking) == 1
    assert len(redacted) == 1
    assert thinking[0].provider == "anthropic"
    assert redacted[0].provider == "anthropic"
    assert thinking[0].thinking == LONG_THOUGHT
    assert sim.issued_thinking(thinking[0].signature) == LONG_THOUGHT
    assert result.usage.reasoning_tokens is not None
    assert result.usage.reasoning_tokens > 0

    sent = bodies(sim)
    assert len(sent) == 3
    for body in sent:
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
        assert body["max_tokens"] == 8000
    assistant = sent[1]["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": LONG_THOUGHT,
        "signature": thinking[0].signature,
    }
    assert [b["type"] for b in assistant["content"]] == ["thinking", "text", "tool_use"]
    assistant2 = sent[2]["messages"][3]
    assert assistant2["content"][0] == {
        "type": "redacted_thinking",
        "data": "EmwKAhgBEgy3va3pzix/LafPsn4a",
    }
    # Earlier thinking is replayed byte-identically in the later request too.
    assert sent[2]["messages"][1] == strip_cc(assistant)


# --- stop reasons -----------------------------------------------------------------------------


async def test_pause_turn_is_resent_and_not_counted(sim: AnthropicSimulator) -> None:
    calls = Calls()
    sim.add(
        SimReply(
            content=[server_tool_use_block("web_search", {"query": "weather"})],
            stop_reason="pause_turn",
        ),
        tool_use("add", {"a": 2, "b": 2}),
        text("It is 4."),
    )
    # Two model calls allowed: if the pause counted, the tool call would be the last allowed
    # call and the turn would end iteration_limit.
    agent = Agent(
        model=make_model(sim), tools=calls.tools(), limits=Limits(max_model_calls_per_turn=2)
    )
    result = await agent.run("search")

    assert result.status == "completed", result.outcome
    assert result.output_text == "It is 4."
    assert calls.log == ["add(2,2)"]
    assert result.turn.model_calls == 2
    assert result.usage.requests == 3
    validate_complete_turns(result.turn.messages)
    server_calls = [
        b for m in result.turn.messages for b in m.content if isinstance(b, ServerToolCall)
    ]
    assert [(c.name, c.provider) for c in server_calls] == [("web_search", "anthropic")]

    sent = bodies(sim)
    assert len(sent) == 3
    first, resend, last = (strip_cc(b["messages"]) for b in sent)
    # The resend adds no user message: it starts with the first request's messages and
    # anything after them is assistant content.
    assert resend[: len(first)] == first
    assert all(m["role"] == "assistant" for m in resend[len(first) :])
    assert "tool_choice" not in sent[1]
    assert sent[2]["tool_choice"] == {"type": "none"}  # the last allowed call
    assert last[-1]["role"] == "user"


async def test_pause_turn_resend_carries_the_paused_content_as_is(
    sim: AnthropicSimulator,
) -> None:
    sim.add(
        SimReply(
            content=[
                text_block("Searching."),
                server_tool_use_block("web_search", {"query": "weather"}, id="srvtoolu_01Pause"),
            ],
            stop_reason="pause_turn",
        ),
        text("Sunny."),
    )
    result = await Agent(model=make_model(sim)).run("search")
    assert result.status == "completed"
    resend = strip_cc(bodies(sim)[1]["messages"])
    assert resend[-1] == {
        "role": "assistant",
        "content": [
            text_block("Searching."),
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01Pause",
                "name": "web_search",
                "input": {"query": "weather"},
            },
        ],
    }


def _two_pauses(sim: AnthropicSimulator) -> None:
    for sid in ("srvtoolu_01PauseA", "srvtoolu_01PauseB"):
        sim.add(
            SimReply(
                content=[server_tool_use_block("web_search", {"query": "q"}, id=sid)],
                stop_reason="pause_turn",
            )
        )


def _server_call_ids(messages: Sequence[Message]) -> list[str]:
    return [b.id for m in messages for b in m.content if isinstance(b, ServerToolCall)]


async def test_too_many_pauses_end_incomplete_pause(sim: AnthropicSimulator) -> None:
    _two_pauses(sim)
    agent = Agent(model=make_model(sim), limits=Limits(max_pause_continuations=1))
    result = await agent.run("search")

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "pause"
    assert result.outcome.next == "continue"
    assert result.error is None
    assert result.stop_reason == "pause_turn"
    validate_complete_turns(result.turn.messages)
    # The trailing unanswered server call is dropped from the saved history.
    assert "srvtoolu_01PauseB" not in _server_call_ids(result.turn.messages)
    assert len(bodies(sim)) == 2


async def test_giving_up_on_pauses_leaves_no_orphan_server_call(sim: AnthropicSimulator) -> None:
    _two_pauses(sim)
    agent = Agent(model=make_model(sim), limits=Limits(max_pause_continuations=1))
    result = await agent.run("search")
    assert result.outcome is not None
    assert result.outcome.reason == "pause"
    assert _server_call_ids(result.turn.messages) == []


@STREAMING
async def test_refusal_completes_with_stop_details(
    sim: AnthropicSimulator, streaming: bool
) -> None:
    calls = Calls()
    details = {"type": "refusal", "category": "cyber", "explanation": "Not allowed."}
    sim.add(
        reply(
            blocks=[text_block("I can't help with that."), tool_use_block("echo", {"value": "x"})],
            stop_reason="refusal",
            stop_details=details,
        )
    )
    result = await Agent(model=make_model(sim, streaming=streaming), tools=calls.tools()).run(
        "do something bad"
    )

    assert result.status == "completed"
    assert result.outcome is None
    assert result.error is None
    assert result.stop_reason == "refusal"
    assert isinstance(result.stop_details, dict)
    assert result.stop_details["category"] == "cyber"
    assert result.stop_details == details
    assert calls.log == []  # a refused response's calls never run
    validate_complete_turns(result.turn.messages)
    answered = tool_results(result.turn.messages)
    assert [result_text(r) for r in answered] == [NOT_RUN_TEXT]
    assert all(r.is_error for r in answered)


@STREAMING
async def test_max_tokens_answers_complete_calls_not_run(
    sim: AnthropicSimulator, streaming: bool
) -> None:
    """The simulator cannot emit a truncated ``partial_json``, so every call here is complete:
    none runs, each is answered "Not run", and the turn ends ``output_limit``."""
    calls = Calls()
    sim.add(
        reply(
            blocks=[
                text_block("Working on it."),
                tool_use_block("add", {"a": 1, "b": 2}),
                tool_use_block("echo", {"value": "cut"}),
            ],
            stop_reason="max_tokens",
        )
    )
    result = await Agent(model=make_model(sim, streaming=streaming), tools=calls.tools()).run("go")

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "output_limit"
    assert result.outcome.next == "continue"
    assert result.error is None
    assert result.stop_reason == "max_tokens"
    assert calls.log == []
    assert [c.state for c in result.outcome.tool_calls] == ["not_started", "not_started"]
    validate_complete_turns(result.turn.messages)
    answered = tool_results(result.turn.messages)
    assert [result_text(r) for r in answered] == [NOT_RUN_TEXT, NOT_RUN_TEXT]
    assert texts_of(result.turn.messages) == ["Working on it."]
    assert result.turn.messages[-1].role == "user"  # the outcome note comes last
    assert "turn-incomplete" in result.turn.messages[-1].text


async def test_stop_sequence_is_reported(sim: AnthropicSimulator) -> None:
    sim.add(text("Counting 1 2 3", stop_reason="stop_sequence", stop_sequence="4"))
    settings = ModelSettings(stop_sequences=("4",))
    result = await Agent(model=make_model(sim), model_settings=settings).run("count")
    assert result.status == "completed"
    assert result.stop_reason == "stop_sequence"
    assert result.output_text == "Counting 1 2 3"
    assert bodies(sim)[0]["stop_sequences"] == ["4"]


# --- retries ----------------------------------------------------------------------------------

RETRYABLE: list[tuple[str, ScriptItem, bool]] = [
    # (id, fault, also applies to a non-streaming request)
    ("429-retry-after", SimFault(status=429, retry_after=1), True),
    ("429-retry-after-ms", SimFault(status=429, retry_after_ms=5), True),
    ("503", SimFault(status=503), True),
    ("504", SimFault(status=504), True),
    ("529", SimFault(status=529), True),
    ("529-should-retry-true", SimFault(status=529, should_retry=True), True),
    ("stream-overloaded-before-any-event", SimStreamError(after_events=0), True),
    ("stream-overloaded-after-message-start", SimStreamError(after_events=1), True),
    (
        "stream-rate-limit-after-message-start",
        SimStreamError(after_events=1, error_type="rate_limit_error"),
        True,
    ),
    # A non-streaming request gets HTTP 500 for an api_error, retried like the stream error.
    (
        "stream-api-error-after-message-start",
        SimStreamError(after_events=1, error_type="api_error"),
        True,
    ),
    ("cut-before-any-event", SimCut(after_events=0), True),
    ("cut-after-message-start", SimCut(after_events=1), True),
]


def _retry_cases() -> list[Any]:
    cases: list[Any] = []
    for name, fault, json_too in RETRYABLE:
        cases.append(pytest.param(fault, True, id=f"stream-{name}"))
        if json_too:
            cases.append(pytest.param(fault, False, id=f"json-{name}"))
    return cases


@pytest.mark.parametrize(("fault", "streaming"), _retry_cases())
async def test_retryable_fault_is_retried_without_duplicated_output(
    sim: AnthropicSimulator, fault: ScriptItem, streaming: bool
) -> None:
    sim.add(fault, text(ANSWER))
    events = Events()
    started = time.monotonic()
    result = await Agent(model=make_model(sim, streaming=streaming)).run("hi", on_event=events)
    elapsed = time.monotonic() - started

    assert result.status == "completed", result.error
    assert result.error is None
    assert len(sim.message_requests) == 2
    assert bodies(sim)[0] == bodies(sim)[1]  # the same request, resent
    assert result.output_text == ANSWER
    assert sum(m.text.count(ANSWER) for m in result.turn.messages) == 1
    assert texts_of(result.turn.messages) == [ANSWER]
    validate_complete_turns(result.turn.messages)
    assert result.usage.requests == 1  # the failed attempt delivered nothing
    if streaming:
        # The consumer saw exactly one response: nothing of the failed attempt leaked.
        assert events.streamed_text() == ANSWER
        assert events.message_starts() == 1
    if isinstance(fault, SimFault) and fault.retry_after is not None:
        # retry-after (1 s) replaces the backoff but is capped at max_backoff (0.01 s).
        assert elapsed < 1.0


async def test_several_faults_in_a_row_then_success(sim: AnthropicSimulator) -> None:
    sim.add(
        SimFault(status=529),
        SimStreamError(after_events=1),
        SimFault(status=503),
        SimCut(after_events=0),
        text(ANSWER),
    )
    result = await Agent(model=make_model(sim)).run("hi")
    assert result.status == "completed"
    assert len(sim.message_requests) == 5
    assert texts_of(result.turn.messages) == [ANSWER]


@STREAMING
async def test_retries_stop_after_max_retries(sim: AnthropicSimulator, streaming: bool) -> None:
    sim.add(SimFault(status=529), SimFault(status=529), SimFault(status=529))
    policy = RetryPolicy(max_retries=2, initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
    model = make_model(sim, streaming=streaming, retry=policy)
    result = await Agent(model=model).run("hi")

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    assert isinstance(result.error, OverloadedError)
    assert result.error.status == 529
    assert len(sim.message_requests) == 3
    validate_complete_turns(result.turn.messages)


STREAM_LONG = "Hello there, this answer is long enough to arrive in several text deltas."


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(SimStreamError(after_events=3, reply=text(STREAM_LONG)), id="error-event"),
        pytest.param(
            SimStreamError(after_events=3, error_type="rate_limit_error", reply=text(STREAM_LONG)),
            id="rate-limit-event",
        ),
        pytest.param(SimCut(after_events=3, reply=text(STREAM_LONG)), id="cut"),
    ],
)
async def test_failure_after_content_is_not_retried(
    sim: AnthropicSimulator, fault: ScriptItem
) -> None:
    # After message_start, content_block_start and one text delta the stream fails.
    sim.add(fault)
    events = Events()
    result = await Agent(model=make_model(sim)).run("hi", on_event=events)

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "stream_interrupted"
    assert result.outcome.next == "continue"
    assert result.outcome.usage_unknown
    assert isinstance(result.error, StreamInterruptedError)
    assert len(sim.message_requests) == 1
    partial = STREAM_LONG[:16]  # the simulator's first text chunk
    assert events.streamed_text() == partial
    assert texts_of(result.turn.messages) == [partial]  # the partial text is kept
    validate_complete_turns(result.turn.messages)
    assert "turn-incomplete" in result.turn.messages[-1].text


def _five_caller_markers() -> list[Message]:
    """A history whose caller-placed cache markers alone exceed the API's 4."""
    marked = tuple(TextBlock(text=f"part {i}", cache_control=CacheControl()) for i in range(5))
    return [Message(role="user", content=marked), Message.assistant("Noted.")]


@STREAMING
async def test_invalid_request_400_is_not_retried(sim: AnthropicSimulator, streaming: bool) -> None:
    result = await Agent(model=make_model(sim, streaming=streaming)).run(
        "go", history=_five_caller_markers()
    )

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    err = result.error
    assert isinstance(err, InvalidRequestError)
    assert err.status == 400
    assert err.error_type == "invalid_request_error"
    assert err.request_id is not None
    assert err.request_id.startswith("req_")
    assert "A maximum of 4 blocks with cache_control may be provided. Found 5." in str(err)
    assert not err.retryable
    assert len(sim.message_requests) == 1
    # dive placed none of its own markers: the caller's five went as built.
    assert len(markers(bodies(sim)[0])) == 5
    validate_complete_turns(result.turn.messages)


CREDIT = (
    "Your credit balance is too low to access the Anthropic API. "
    "Please go to Plans & Billing to upgrade or purchase credits."
)


@pytest.mark.parametrize(
    ("fault", "error_class", "status"),
    [
        pytest.param(SimFault(status=401), AuthenticationError, 401, id="401"),
        pytest.param(
            SimFault(status=529, should_retry=False),
            OverloadedError,
            529,
            id="529-should-retry-false",
        ),
        pytest.param(
            SimFault(status=429, message=CREDIT), RateLimitedError, 429, id="429-credit-balance"
        ),
        pytest.param(
            SimFault(status=429, message=CREDIT, should_retry=True),
            RateLimitedError,
            429,
            id="429-credit-balance-should-retry-true",
        ),
    ],
)
@STREAMING
async def test_non_retryable_status_is_not_retried(
    sim: AnthropicSimulator,
    fault: SimFault,
    error_class: type[ProviderError],
    status: int,
    streaming: bool,
) -> None:
    sim.add(fault)
    result = await Agent(model=make_model(sim, streaming=streaming)).run("hi")

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    err = result.error
    assert type(err) is error_class
    assert isinstance(err, ProviderError)
    assert err.status == status
    assert err.provider == "anthropic"
    assert err.request_id is not None
    assert err.request_id.startswith("req_")
    assert not err.retryable
    assert len(sim.message_requests) == 1  # a retry would have hit the exhausted script
    validate_complete_turns(result.turn.messages)


@pytest.mark.parametrize(
    ("fault", "error_class"),
    [
        pytest.param(SimFault(status=429, retry_after=1), RateLimitedError, id="429"),
        pytest.param(SimFault(status=504), ProviderTimeoutError, id="504"),
        pytest.param(SimCut(after_events=0), ProviderConnectionError, id="cut"),
    ],
)
async def test_exhausted_retries_report_the_vendor_error(
    sim: AnthropicSimulator, fault: ScriptItem, error_class: type[ProviderError]
) -> None:
    sim.add(fault, fault)
    policy = RetryPolicy(max_retries=1, initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
    result = await Agent(model=make_model(sim, retry=policy)).run("hi")
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    assert isinstance(result.error, error_class)
    assert len(sim.message_requests) == 2
    if isinstance(fault, SimFault):
        assert result.error.status == fault.status
    if isinstance(fault, SimFault) and fault.retry_after is not None:
        assert result.error.retry_after == 1.0


# --- golden requests --------------------------------------------------------------------------


def tooldefs(*names: str) -> tuple[ToolDefinition, ...]:
    return tuple(ToolDefinition(name=n, description=f"tool {n}") for n in names)


def schema_tool(name: str, *, cc: bool = False) -> Json:
    out: Json = {
        "name": name,
        "input_schema": {"type": "object", "properties": {}},
        "description": f"tool {name}",
    }
    if cc:
        out["cache_control"] = EPHEMERAL
    return out


async def send(
    sim: AnthropicSimulator,
    request: ModelRequest,
    *,
    name: str = MODEL,
    streaming: bool = True,
) -> Json:
    """Send ``request`` through ``AnthropicModel`` and return the recorded body."""
    sim.add(text("ok"))
    model = make_model(sim, name=name, streaming=streaming)
    response = await collect(model, request) if streaming else await model.generate(request)
    assert response.stop_reason == "end_turn"
    return bodies(sim)[-1]


TOOL_LOOP_HISTORY = (
    Message.user("go"),
    Message.assistant("calling", ToolCall(id="toolu_1", name="alpha", arguments={"x": 1})),
    Message.tool(ToolResult(tool_call_id="toolu_1", content=(TextBlock(text="one"),))),
)


@STREAMING
async def test_golden_system_sorted_tools_and_cache_markers(
    sim: AnthropicSimulator, streaming: bool
) -> None:
    request = ModelRequest(
        system="be brief", messages=TOOL_LOOP_HISTORY, tools=tooldefs("zeta", "alpha", "mid")
    )
    body = await send(sim, request, streaming=streaming)
    expected: Json = {
        "max_tokens": 8192,
        "messages": [
            {"role": "user", "content": [{**text_block("go"), "cache_control": EPHEMERAL}]},
            {
                "role": "assistant",
                "content": [
                    text_block("calling"),
                    {"type": "tool_use", "id": "toolu_1", "name": "alpha", "input": {"x": 1}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [text_block("one")],
                        "cache_control": EPHEMERAL,
                    }
                ],
            },
        ],
        "model": MODEL,
        "system": [{**text_block("be brief"), "cache_control": EPHEMERAL}],
        "tools": [schema_tool("alpha"), schema_tool("mid"), schema_tool("zeta", cc=True)],
    }
    if streaming:
        expected["stream"] = True
    assert body == expected
    assert markers(body) == [
        ("tools", 2, 0),
        ("system", 0, 0),
        ("messages", 0, 0),
        ("messages", 2, 0),
    ]


async def test_golden_caller_markers_count_against_the_budget(sim: AnthropicSimulator) -> None:
    marked = tuple(TextBlock(text=f"part {i}", cache_control=CacheControl()) for i in range(3))
    history = (Message(role="user", content=marked), *TOOL_LOOP_HISTORY[1:])
    body = await send(
        sim, ModelRequest(system="sys", messages=history, tools=tooldefs("beta", "alpha"))
    )
    where = markers(body)
    assert len(where) == 4
    # The caller's three stay; dive adds only its first candidate, the last tool.
    assert where == [("tools", 1, 0), ("messages", 0, 0), ("messages", 0, 1), ("messages", 0, 2)]
    assert "cache_control" not in body["system"][0]


async def test_golden_caching_off_places_no_marker(sim: AnthropicSimulator) -> None:
    request = ModelRequest(
        system="sys",
        messages=TOOL_LOOP_HISTORY,
        tools=tooldefs("alpha"),
        settings=ModelSettings(caching=False),
    )
    body = await send(sim, request)
    assert markers(body) == []


async def test_golden_one_hour_ttl(sim: AnthropicSimulator) -> None:
    request = ModelRequest(
        system="sys",
        messages=TOOL_LOOP_HISTORY,
        tools=tooldefs("alpha"),
        settings=ModelSettings(cache_ttl="1h"),
    )
    body = await send(sim, request)
    hour = {"type": "ephemeral", "ttl": "1h"}
    assert body["tools"][0]["cache_control"] == hour
    assert body["system"][0]["cache_control"] == hour
    assert body["messages"][2]["content"][0]["cache_control"] == hour


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        pytest.param(ModelSettings(), None, id="default"),
        pytest.param(
            ModelSettings(tool_choice=ToolChoice(type="auto")), {"type": "auto"}, id="auto"
        ),
        pytest.param(ModelSettings(tool_choice=ToolChoice(type="any")), {"type": "any"}, id="any"),
        pytest.param(
            ModelSettings(tool_choice=ToolChoice(type="tool", name="alpha")),
            {"type": "tool", "name": "alpha"},
            id="tool",
        ),
        pytest.param(
            ModelSettings(tool_choice=ToolChoice(type="none")), {"type": "none"}, id="none"
        ),
        pytest.param(
            ModelSettings(tool_choice=ToolChoice(type="any", disable_parallel=True)),
            {"type": "any", "disable_parallel_tool_use": True},
            id="any-single",
        ),
        pytest.param(
            ModelSettings(parallel_tool_calls=False),
            {"type": "auto", "disable_parallel_tool_use": True},
            id="no-parallel",
        ),
        pytest.param(
            ModelSettings(tool_choice=ToolChoice(type="none"), parallel_tool_calls=False),
            {"type": "none"},
            id="none-ignores-parallel",
        ),
    ],
)
async def test_golden_tool_choice(
    sim: AnthropicSimulator, settings: ModelSettings, expected: Json | None
) -> None:
    request = ModelRequest(
        messages=(Message.user("hi"),), tools=tooldefs("alpha", "beta"), settings=settings
    )
    body = await send(sim, request)
    if expected is None:
        assert "tool_choice" not in body
    else:
        assert body["tool_choice"] == expected


@pytest.mark.parametrize(
    ("model", "settings", "thinking", "output_config", "max_tokens"),
    [
        pytest.param(
            MODEL,
            THINKING,
            {"type": "enabled", "budget_tokens": 2048},
            None,
            8000,
            id="enabled-budget",
        ),
        pytest.param(
            MODEL,
            ModelSettings(reasoning_budget=3000),
            {"type": "enabled", "budget_tokens": 3000},
            None,
            8192,
            id="budget-implies-enabled",
        ),
        pytest.param(
            MODEL,
            ModelSettings(thinking="enabled", max_tokens=10000),
            {"type": "enabled", "budget_tokens": 5000},
            None,
            10000,
            id="default-budget",
        ),
        pytest.param(
            MODEL,
            ModelSettings(
                thinking="enabled",
                reasoning_budget=2048,
                max_tokens=8000,
                thinking_display="omitted",
            ),
            {"type": "enabled", "budget_tokens": 2048, "display": "omitted"},
            None,
            8000,
            id="display-omitted",
        ),
        pytest.param(
            MODEL,
            ModelSettings(thinking="adaptive", reasoning_effort="medium"),
            {"type": "adaptive"},
            {"effort": "medium"},
            8192,
            id="adaptive-effort",
        ),
        pytest.param(
            MODEL,
            ModelSettings(reasoning_effort="minimal"),
            None,
            {"effort": "low"},
            8192,
            id="minimal-is-low",
        ),
        pytest.param(MODEL, ModelSettings(thinking="disabled"), None, None, 8192, id="disabled"),
        pytest.param(
            ADAPTIVE_MODEL,
            ModelSettings(thinking="enabled", reasoning_budget=2048, reasoning_effort="high"),
            {"type": "adaptive", "display": "summarized"},
            {"effort": "high"},
            8192,
            id="adaptive-only-maps-budget",
        ),
        pytest.param(
            ADAPTIVE_MODEL,
            ModelSettings(thinking="adaptive", reasoning_effort="max"),
            {"type": "adaptive"},
            {"effort": "max"},
            8192,
            id="adaptive-only-max-effort",
        ),
        pytest.param(
            ADAPTIVE_MODEL,
            ModelSettings(reasoning_effort="xhigh"),
            None,
            {"effort": "xhigh"},
            8192,
            id="effort-without-thinking",
        ),
    ],
)
async def test_golden_thinking_and_effort(
    sim: AnthropicSimulator,
    model: str,
    settings: ModelSettings,
    thinking: Json | None,
    output_config: Json | None,
    max_tokens: int,
) -> None:
    request = ModelRequest(messages=(Message.user("hi"),), settings=settings)
    body = await send(sim, request, name=model)  # the simulator accepted it: no 400
    assert body.get("thinking") == thinking
    assert body.get("output_config") == output_config
    assert body["max_tokens"] == max_tokens
    assert body["model"] == model


async def test_golden_stop_sequences_metadata_and_headers(sim: AnthropicSimulator) -> None:
    settings = ModelSettings(
        stop_sequences=("END", "STOP"),
        metadata={"user_id": "user-42", "ignored": "x"},
        request_headers={"x-dive-test": "yes"},
        service_tier="standard_only",
    )
    body = await send(sim, ModelRequest(messages=(Message.user("hi"),), settings=settings))
    assert body["stop_sequences"] == ["END", "STOP"]
    assert body["metadata"] == {"user_id": "user-42"}
    assert body["service_tier"] == "standard_only"
    assert sim.message_requests[-1].headers["x-dive-test"] == "yes"


async def test_context_management_is_sent_with_its_beta_headers(sim: AnthropicSimulator) -> None:
    edits: dict[str, Any] = {
        "edits": [{"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": 3}}]
    }
    settings = ModelSettings(
        context_management=edits, request_headers={"anthropic-beta": "other-2025-01-01"}
    )
    body = await send(sim, ModelRequest(messages=(Message.user("hi"),), settings=settings))
    assert body["context_management"] == edits
    assert sim.message_requests[-1].headers["anthropic-beta"] == (
        "other-2025-01-01,context-management-2025-06-27"
    )
    compaction = ModelSettings(context_management={"edits": [{"type": "compact_20260112"}]})
    body = await send(sim, ModelRequest(messages=(Message.user("hi"),), settings=compaction))
    assert body["context_management"] == {"edits": [{"type": "compact_20260112"}]}
    assert sim.message_requests[-1].headers["anthropic-beta"] == "compact-2026-01-12"


@pytest.mark.parametrize(
    ("model", "settings", "expected"),
    [
        pytest.param(
            MODEL,
            ModelSettings(temperature=0.3, top_k=40, top_p=0.9),
            {"temperature": 0.3, "top_k": 40, "top_p": 0.9},
            id="plain",
        ),
        pytest.param(
            MODEL,
            THINKING.merge(ModelSettings(temperature=0.3, top_k=40, top_p=0.5)),
            {"top_p": 0.95},
            id="thinking-drops-temperature-and-top-k",
        ),
        pytest.param(
            MODEL,
            THINKING.merge(ModelSettings(temperature=1.0)),
            {"temperature": 1.0},
            id="thinking-keeps-temperature-1",
        ),
        pytest.param(
            ADAPTIVE_MODEL,
            ModelSettings(temperature=0.3),
            {},
            id="adaptive-only-drops-temperature",
        ),
    ],
)
async def test_golden_sampling_parameters(
    sim: AnthropicSimulator, model: str, settings: ModelSettings, expected: Json
) -> None:
    request = ModelRequest(messages=(Message.user("hi"),), settings=settings)
    body = await send(sim, request, name=model)  # the simulator accepted it: no 400
    sampling = {k: body[k] for k in ("temperature", "top_k", "top_p") if k in body}
    assert sampling == expected


# --- prompt caching end to end ----------------------------------------------------------------

LONG_SYSTEM = "You are a meticulous assistant who double-checks every sum. " * 210  # ~12,600 chars


def prefix_bytes(body: Json, messages: int) -> bytes:
    """Tools, system and the first ``messages`` messages, without cache markers, as bytes."""
    prefix = {
        "tools": strip_cc(body.get("tools")),
        "system": strip_cc(body.get("system")),
        "messages": strip_cc(body["messages"][:messages]),
    }
    return json.dumps(prefix, ensure_ascii=False).encode()


async def test_prompt_caching_reads_from_turn_two_and_the_prefix_is_byte_stable(
    sim: AnthropicSimulator,
) -> None:
    calls = Calls()
    sim.add(
        tool_use("add", {"a": 1, "b": 2}),
        tool_use("echo", {"value": "hello"}),
        tool_use("add", {"a": 5, "b": 6}),
        text("Sums checked."),
        text("You are welcome."),
    )
    agent = Agent(model=make_model(sim), tools=calls.tools(), instructions=LONG_SYSTEM)
    first = await agent.run("check some sums")
    assert first.status == "completed"
    second = await agent.run("thanks", history=first.turn.messages)
    assert second.status == "completed"
    validate_complete_turns([*first.turn.messages, *second.turn.messages])

    usages = [*message_usages(first), *message_usages(second)]
    assert len(usages) == 5
    assert usages[0].cache_creation_input_tokens > 0
    assert usages[0].cache_read_input_tokens == 0
    reads = [u.cache_read_input_tokens for u in usages]
    assert all(r > 0 for r in reads[1:]), reads
    assert reads == sorted(reads)  # each call reads at least what the one before it wrote
    assert first.usage.cache_read_input_tokens == sum(reads[:4])
    assert second.usage.cache_read_input_tokens == reads[4]
    assert all(u.cost is not None for u in usages)

    sent = bodies(sim)
    assert len(sent) == 5
    for body in sent:
        assert len(markers(body)) <= 4
        assert "cache_control" in body["tools"][-1]
        assert "cache_control" in body["system"][-1]
    for before, after in itertools.pairwise(sent):
        n = len(before["messages"])
        assert len(after["messages"]) > n
        assert prefix_bytes(after, n) == prefix_bytes(before, n)


# --- bad input --------------------------------------------------------------------------------


async def test_unknown_model_works_with_conservative_capabilities_and_a_warning(
    sim: AnthropicSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"claude-zz-test-{uuid.uuid4().hex[:8]}"  # fresh: the warning is once per name
    sim.add(text(ANSWER))
    settings = ModelSettings(reasoning_budget=2048, reasoning_effort="high")
    agent = Agent(model=make_model(sim, name=name), model_settings=settings)
    with caplog.at_level(logging.WARNING, logger="dive.providers.anthropic"):
        result = await agent.run("hi")
    assert f"unknown model {name!r}: using conservative capabilities" in caplog.messages

    assert result.status == "completed"
    assert result.output_text == ANSWER
    body = bodies(sim)[0]
    assert body["model"] == name
    assert body["max_tokens"] == 4096  # the conservative default
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}  # budgets allowed
    assert "output_config" not in body  # no effort setting for an unknown model


FORCED_WITH_THINKING = THINKING.merge(ModelSettings(tool_choice=ToolChoice(type="any")))


@pytest.mark.parametrize(
    "choice",
    [ToolChoice(type="any"), ToolChoice(type="tool", name="add")],
    ids=["any", "tool"],
)
@STREAMING
async def test_forced_tool_choice_with_thinking_is_refused_before_any_request(
    sim: AnthropicSimulator, choice: ToolChoice, streaming: bool
) -> None:
    calls = Calls()
    settings = THINKING.merge(ModelSettings(tool_choice=choice))
    model = make_model(sim, streaming=streaming)
    # a configuration error: raised at Agent(...), naming both settings
    with pytest.raises(UnsupportedSettingError, match=r"thinking=.*tool_choice="):
        Agent(model=model, tools=calls.tools(), model_settings=settings)
    # ... and at run() before the turn begins, when the run's settings bring it
    agent = Agent(model=model, tools=calls.tools(), model_settings=THINKING)
    with pytest.raises(UnsupportedSettingError, match="forced tool choice"):
        await agent.run("hi", model_settings=ModelSettings(tool_choice=choice))
    assert sim.requests == []


@STREAMING
async def test_forced_tool_choice_with_thinking_raises_from_the_model(
    sim: AnthropicSimulator, streaming: bool
) -> None:
    model = make_model(sim, streaming=streaming)
    request = ModelRequest(
        messages=(Message.user("hi"),), tools=tooldefs("alpha"), settings=FORCED_WITH_THINKING
    )
    call = collect(model, request) if streaming else model.generate(request)
    with pytest.raises(UnsupportedSettingError, match="forced tool choice"):
        await call
    assert sim.requests == []


async def test_budget_not_below_max_tokens_is_refused_before_any_request(
    sim: AnthropicSimulator,
) -> None:
    model = make_model(sim)
    request = ModelRequest(
        messages=(Message.user("hi"),),
        settings=ModelSettings(reasoning_budget=4096, max_tokens=4096),
    )
    with pytest.raises(UnsupportedSettingError, match="must be smaller than max_tokens"):
        await collect(model, request)
    assert sim.requests == []


async def test_computer_use_declarer_sends_the_provider_tool_and_dispatches_to_the_executor(
    sim: AnthropicSimulator,
) -> None:
    from dive.providers.anthropic import ComputerUse
    from dive.tools import tool as make_tool

    actions: list[str] = []

    @make_tool(name="computer")
    async def computer(action: str, coordinate: list[int] | None = None) -> str:
        """Perform a computer action."""
        actions.append(action)
        return f"did {action}"

    sim.add(
        sim.reply(blocks=[tool_use_block("computer", {"action": "screenshot"}, id="toolu_c1")]),
        sim.text("Looked at the screen."),
    )
    declarer = ComputerUse(computer, display_width_px=1024, display_height_px=768)
    agent = Agent(model=make_model(sim), tools=[declarer, computer])
    result = await agent.run("look")
    assert result.status == "completed"
    assert actions == ["screenshot"]
    sent_tools = bodies(sim)[0]["tools"]
    assert [t["name"] for t in sent_tools] == ["computer"]
    assert sent_tools[0]["type"] == "computer_20250124"
    assert sent_tools[0]["display_width_px"] == 1024
