"""The OpenAI providers end to end: ``OpenAIChatModel`` and ``OpenAIResponsesModel`` through the
real ``openai`` SDK against ``OpenAISimulator`` (wire-apis.md Parts B, C, D; messages.md §7;
turns.md §3, §4, §6, §18; features.md §7 Retries).

Every test drives real HTTP: dive builds the request, the SDK sends it, the simulator validates
it (tool pairing, encrypted reasoning it issued, parameter limits) and answers from its script;
the request bodies it recorded are the golden evidence.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal, cast

import httpx2
import openai
import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

import dive
import dive.testing.anthropic as anth
from dive.agent import Agent, MessageEvent, RunResult
from dive.errors import (
    AuthenticationError,
    InvalidRequestError,
    OverloadedError,
    ProviderError,
    ProviderStateError,
    RateLimitedError,
    StreamInterruptedError,
)
from dive.llm import ModelSettings, Usage
from dive.messages import (
    JSONValue,
    Message,
    ProviderState,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    validate_complete_turns,
)
from dive.providers._retry import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from dive.sessions import MemorySessionStore
from dive.testing.openai import (
    OpenAISimulator,
    ScriptItem,
    SimCut,
    SimFault,
    SimStreamError,
    SimTruncated,
    call,
    prompt_tokens,
    reasoning,
    refusal,
    reply,
    simulator,
    text,
    tool_call,
    tool_calls,
)
from dive.turns import NOT_RUN_TEXT
from tests._events import Events

Api = Literal["chat", "responses"]
Json = dict[str, Any]
OpenAIModel = OpenAIChatModel | OpenAIResponsesModel

CHAT_MODEL = "gpt-4.1"
RESPONSES_MODEL = "gpt-5"
MODEL_OF: dict[Api, str] = {"chat": CHAT_MODEL, "responses": RESPONSES_MODEL}
FINISHED: dict[Api, str] = {"chat": "stop", "responses": "end_turn"}
FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
ANSWER = "Hello from the model."
LONG = "Hello there, this answer is long enough to arrive in several text deltas."
CHUNK = 16  # the simulator's characters per streamed delta
ENCRYPTED = ["reasoning.encrypted_content"]

API = pytest.mark.parametrize("api", ["chat", "responses"])
STREAMING = pytest.mark.parametrize("streaming", [True, False], ids=["stream", "json"])


# --- helpers ----------------------------------------------------------------------------------


_OPEN: list[OpenAIModel | AnthropicModel] = []


@pytest.fixture
async def sim() -> AsyncIterator[OpenAISimulator]:
    """A simulator whose script must be used up; the models made against it are closed after."""
    with simulator(assert_consumed=True) as s:
        try:
            yield s
        finally:
            while _OPEN:
                await _OPEN.pop().aclose()


def make_model(
    sim: OpenAISimulator,
    api: Api,
    *,
    streaming: bool = True,
    retry: RetryPolicy = FAST,
    name: str | None = None,
) -> OpenAIModel:
    cls = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    model = cls(
        name or MODEL_OF[api],
        base_url=sim.url,
        api_key="test",
        retry=retry,
        streaming=streaming,
    )
    _OPEN.append(model)
    return model


def bodies(sim: OpenAISimulator, api: Api) -> list[Json]:
    """The JSON bodies of the recorded requests to ``api``'s endpoint."""
    recorded = sim.chat_requests if api == "chat" else sim.responses_requests
    return [r.body for r in recorded]


def item_types(items: Sequence[Json]) -> list[str | None]:
    return [i.get("type") for i in items]


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


def message_usages(result: RunResult[Any]) -> list[Usage]:
    """The per-call usage of each model call, from the ``message`` events."""
    return [e.usage for e in result.items if isinstance(e, MessageEvent)]


def texts_of(messages: Sequence[Message], role: str = "assistant") -> list[str]:
    return [m.text for m in messages if m.role == role]


def tool_results(messages: Sequence[Message]) -> list[ToolResult]:
    return [m.tool_result for m in messages if m.tool_result is not None]


def result_text(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextBlock))


def calls_of(messages: Sequence[Message]) -> list[ToolCall]:
    return [c for m in messages for c in m.tool_calls]


def ends_with_outcome_note(messages: Sequence[Message]) -> bool:
    return messages[-1].role == "user" and "turn-incomplete" in messages[-1].text


def api_cost(model: str, *, input_total: int, cached: int, output: int) -> float:
    """The price of the API's own usage numbers (input total includes the cached tokens)."""
    priced = PriceUsage(input_tokens=input_total, cache_read_tokens=cached, output_tokens=output)
    return float(calc_price(priced, model_ref=model, provider_id="openai").total_price)


# --- the tool loop ----------------------------------------------------------------------------


def _script_tool_loop(sim: OpenAISimulator) -> None:
    sim.add(
        tool_calls(
            call("add", {"a": 1, "b": 2}), call("echo", {"value": "x"}), text="Let me compute."
        ),
        tool_call("add", {"a": 3, "b": 4}),
        text("The answer is 7."),
    )


def _check_tool_loop_result(result: RunResult[Any], calls: Calls, api: Api) -> None:
    assert result.status == "completed", result.error
    assert result.error is None
    assert result.outcome is None
    assert result.output_text == "The answer is 7."
    assert result.stop_reason == FINISHED[api]
    assert result.model == MODEL_OF[api]
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

    per_call = message_usages(result)
    assert len(per_call) == 3
    assert all(u.output_tokens > 0 and u.total_input_tokens > 0 for u in per_call)
    assert all(u.cost is not None and u.cost > 0 for u in per_call)
    assert result.usage.requests == 3
    assert result.usage.input_tokens == sum(u.input_tokens for u in per_call)
    assert result.usage.output_tokens == sum(u.output_tokens for u in per_call)
    assert result.usage.cost == pytest.approx(sum(u.cost or 0.0 for u in per_call))


@STREAMING
async def test_chat_tool_loop(sim: OpenAISimulator, streaming: bool) -> None:
    calls = Calls()
    _script_tool_loop(sim)
    agent = Agent(
        model=make_model(sim, "chat", streaming=streaming),
        tools=calls.tools(),
        instructions="Be brief.",
    )
    result = await agent.run("compute")
    _check_tool_loop_result(result, calls, "chat")

    sent = bodies(sim, "chat")
    assert len(sent) == 3
    assert sim.responses_requests == []
    for body in sent:
        assert body["model"] == CHAT_MODEL
        if streaming:
            assert body["stream"] is True
            assert body["stream_options"] == {"include_usage": True}
        else:
            assert not body.get("stream")
            assert "stream_options" not in body
        assert [t["type"] for t in body["tools"]] == ["function", "function"]
        assert [t["function"]["name"] for t in body["tools"]] == ["add", "echo"]
        assert body["tools"][0]["function"]["description"] == "Add two numbers."
        assert body["tools"][0]["function"]["parameters"]["type"] == "object"
        assert "max_tokens" not in body

    history_calls = calls_of(result.turn.messages)
    second = sent[1]["messages"]
    assert len(second) == 5
    assert second[0] == {"role": "system", "content": agent.system_prompt()}
    assert second[0]["content"].startswith("Be brief.")
    assert second[1] == {"role": "user", "content": "compute"}
    assistant = second[2]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == "Let me compute."
    wire_calls = assistant["tool_calls"]
    assert [c["id"] for c in wire_calls] == [c.id for c in history_calls[:2]]
    assert all(c["type"] == "function" for c in wire_calls)
    assert [c["function"]["name"] for c in wire_calls] == ["add", "echo"]
    assert all(isinstance(c["function"]["arguments"], str) for c in wire_calls)
    assert [json.loads(c["function"]["arguments"]) for c in wire_calls] == [
        {"a": 1, "b": 2},
        {"value": "x"},
    ]
    # One role:"tool" message per result, in call order, right after the assistant message.
    assert second[3] == {"role": "tool", "tool_call_id": wire_calls[0]["id"], "content": "3"}
    assert second[4] == {"role": "tool", "tool_call_id": wire_calls[1]["id"], "content": "x"}

    third = sent[2]["messages"]
    assert third[:5] == second  # the conversation is resent unchanged, then grows
    assert len(third) == 7
    assert third[5]["role"] == "assistant"
    assert third[5]["content"] is None  # no text: content null, tool_calls present
    assert [json.loads(c["function"]["arguments"]) for c in third[5]["tool_calls"]] == [
        {"a": 3, "b": 4}
    ]
    assert third[6] == {
        "role": "tool",
        "tool_call_id": third[5]["tool_calls"][0]["id"],
        "content": "7",
    }


@STREAMING
async def test_responses_tool_loop(sim: OpenAISimulator, streaming: bool) -> None:
    calls = Calls()
    _script_tool_loop(sim)
    agent = Agent(
        model=make_model(sim, "responses", streaming=streaming),
        tools=calls.tools(),
        instructions="Be brief.",
    )
    result = await agent.run("compute")
    _check_tool_loop_result(result, calls, "responses")

    sent = bodies(sim, "responses")
    assert len(sent) == 3
    assert sim.chat_requests == []
    for body in sent:
        assert body["model"] == RESPONSES_MODEL
        assert body["instructions"] == agent.system_prompt()
        assert body["instructions"].startswith("Be brief.")
        assert body["store"] is False
        assert body["include"] == ENCRYPTED
        assert bool(body.get("stream")) is streaming
        assert "stream_options" not in body
        # Function tools are flat: no nested "function" object.
        assert [t["type"] for t in body["tools"]] == ["function", "function"]
        assert [t["name"] for t in body["tools"]] == ["add", "echo"]
        assert all("function" not in t for t in body["tools"])
        assert body["tools"][1]["description"] == "Echo a value."
        assert body["tools"][1]["parameters"]["type"] == "object"
        assert "messages" not in body

    first_input = sent[0]["input"]
    assert first_input == [{"role": "user", "content": [{"type": "input_text", "text": "compute"}]}]

    second = sent[1]["input"]
    assert item_types(second) == [
        None,  # the user message (role + content)
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert second[0] == first_input[0]
    assert second[1]["role"] == "assistant"
    assert [p["text"] for p in second[1]["content"]] == ["Let me compute."]
    fc = second[2:4]
    history_calls = calls_of(result.turn.messages)
    assert [i["call_id"] for i in fc] == [c.id for c in history_calls[:2]]
    assert [i["name"] for i in fc] == ["add", "echo"]
    assert all(isinstance(i["arguments"], str) for i in fc)
    assert [json.loads(i["arguments"]) for i in fc] == [{"a": 1, "b": 2}, {"value": "x"}]
    assert second[4:] == [
        {"type": "function_call_output", "call_id": fc[0]["call_id"], "output": "3"},
        {"type": "function_call_output", "call_id": fc[1]["call_id"], "output": "x"},
    ]
    # The first response's output items are replayed from its provider state.
    state = result.turn.messages[1].provider_state
    assert state is not None
    assert (state.provider, state.api) == ("openai", "responses")
    assert second[1:4] == state.data

    third = sent[2]["input"]
    assert third[:6] == second
    assert item_types(third[6:]) == ["function_call", "function_call_output"]
    assert json.loads(third[6]["arguments"]) == {"a": 3, "b": 4}
    assert third[7] == {
        "type": "function_call_output",
        "call_id": third[6]["call_id"],
        "output": "7",
    }


@API
@STREAMING
async def test_parallel_calls_are_answered_in_call_order(
    sim: OpenAISimulator, api: Api, streaming: bool
) -> None:
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
        tool_calls(
            call("first", {"tag": "a"}), call("second", {"tag": "b"}), call("third", {"tag": "c"})
        ),
        text("All done."),
    )
    agent = Agent(
        model=make_model(sim, api, streaming=streaming),
        tools=[first, second, third],
        parallel_tool_execution=True,
    )
    result = await agent.run("go")

    assert result.status == "completed", result.error
    assert finished[-1] == "first"  # really ran concurrently and finished out of order
    validate_complete_turns(result.turn.messages)
    ids = [c.id for c in calls_of(result.turn.messages)]
    assert len(ids) == 3
    expected = ["first:a", "second:b", "third:c"]
    last = bodies(sim, api)[1]
    if api == "chat":
        messages = last["messages"]
        assert [c["id"] for c in messages[-4]["tool_calls"]] == ids
        results = messages[-3:]
        assert [m["role"] for m in results] == ["tool", "tool", "tool"]
        assert [m["tool_call_id"] for m in results] == ids
        assert [m["content"] for m in results] == expected
    else:
        items = last["input"]
        assert item_types(items[-6:]) == ["function_call"] * 3 + ["function_call_output"] * 3
        assert [i["call_id"] for i in items[-6:-3]] == ids
        assert [i["call_id"] for i in items[-3:]] == ids
        assert [i["output"] for i in items[-3:]] == expected


# --- reasoning and provider state (Responses) ---------------------------------------------------

THOUGHT = "Plan: add one and two, then report the sum."


@STREAMING
async def test_responses_reasoning_round_trip(sim: OpenAISimulator, streaming: bool) -> None:
    calls = Calls()
    sim.add(
        reply(reasoning=[reasoning(THOUGHT)], tool_calls=[call("add", {"a": 1, "b": 2})]),
        text("It is 3."),
    )
    agent = Agent(
        model=make_model(sim, "responses", streaming=streaming),
        tools=calls.tools(),
        model_settings=ModelSettings(reasoning_effort="low"),
    )
    result = await agent.run("think, then add")

    # The simulator rejects a reasoning item whose encrypted content it did not issue: none came.
    assert result.status == "completed", result.error
    assert result.output_text == "It is 3."
    assert calls.log == ["add(1,2)"]
    validate_complete_turns(result.turn.messages)

    assistant = result.turn.messages[1]
    assert assistant.role == "assistant"
    state = assistant.provider_state
    assert state is not None
    assert state.provider == "openai"
    assert state.api == "responses"
    assert isinstance(state.data, list)
    data = cast(list[Json], state.data)
    assert item_types(data) == ["reasoning", "function_call"]
    thinking = [b for b in assistant.content if isinstance(b, ThinkingBlock)]
    assert len(thinking) == 1
    assert thinking[0].thinking == THOUGHT
    assert thinking[0].provider == "openai"
    assert [c.name for c in assistant.tool_calls] == ["add"]
    final = result.turn.messages[-1]
    assert final.provider_state is not None
    assert final.provider_state.api == "responses"
    assert item_types(cast(list[Json], final.provider_state.data)) == ["message"]

    usage = result.usage
    assert usage.reasoning_tokens is not None
    assert 0 < usage.reasoning_tokens <= usage.output_tokens

    sent = bodies(sim, "responses")
    assert len(sent) == 2
    for body in sent:
        assert body["include"] == ENCRYPTED
        assert body["store"] is False
        assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    replayed = sent[1]["input"]
    assert item_types(replayed) == [None, "reasoning", "function_call", "function_call_output"]
    item = replayed[1]
    assert item["id"] == data[0]["id"]
    assert sim.issued_reasoning(item["encrypted_content"]) == item["id"]
    assert [p["text"] for p in item["summary"]] == [THOUGHT]
    assert replayed[1:3] == data  # dive's stored items, unchanged
    assert replayed[3] == {
        "type": "function_call_output",
        "call_id": replayed[2]["call_id"],
        "output": "3",
    }


@STREAMING
async def test_responses_replays_output_items_verbatim(
    sim: OpenAISimulator, streaming: bool
) -> None:
    """messages.md §7.4 / wire-apis.md C1: output items are echoed back exactly as received."""
    sim.add(
        reply(
            reasoning=[reasoning(THOUGHT, id="rs_fixed1", encrypted_content="enc-fixed-1")],
            tool_calls=[call("add", {"a": 1, "b": 2}, call_id="call_fixed1", id="fc_fixed1")],
        ),
        text("It is 3."),
    )
    result = await Agent(
        model=make_model(sim, "responses", streaming=streaming), tools=Calls().tools()
    ).run("go")
    assert result.status == "completed", result.error

    # Exactly the items the simulator put on the wire (its build_output shapes).
    wire_reasoning = {
        "id": "rs_fixed1",
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": THOUGHT}],
        "encrypted_content": "enc-fixed-1",
    }
    wire_call = {
        "id": "fc_fixed1",
        "type": "function_call",
        "status": "completed",
        "call_id": "call_fixed1",
        "name": "add",
        "arguments": json.dumps({"a": 1, "b": 2}),
    }
    replayed = bodies(sim, "responses")[1]["input"]
    assert replayed[1:3] == [wire_reasoning, wire_call]


@STREAMING
async def test_bad_responses_provider_state_fails_before_sending(
    sim: OpenAISimulator, streaming: bool
) -> None:
    history = [
        Message.user("q"),
        Message(
            role="assistant",
            content=(TextBlock(text="hi"),),
            provider_state=ProviderState(provider="openai", api="responses", data={"x": 1}),
        ),
    ]
    model = make_model(sim, "responses", streaming=streaming)
    result = await Agent(model=model).run("go", history=history)

    assert result.status == "incomplete"
    assert isinstance(result.error, ProviderStateError)
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"  # dive's classification of this failure
    assert sim.requests == []  # raised before anything was sent
    validate_complete_turns(result.turn.messages)
    assert ends_with_outcome_note(result.turn.messages)

    # Chat Completions ignores provider_state (messages.md §7.5): the same history is fine.
    sim.add(ANSWER)
    chat = await Agent(model=make_model(sim, "chat", streaming=streaming)).run(
        "go", history=history
    )
    assert chat.status == "completed", chat.error
    assert bodies(sim, "chat")[0]["messages"][1:] == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": "go"},
    ]


async def test_foreign_provider_state_is_rebuilt_from_content(sim: OpenAISimulator) -> None:
    history = [
        Message.user("q"),
        Message(
            role="assistant",
            content=(TextBlock(text="hi"),),
            provider_state=ProviderState(provider="openai", api="chat_completions", data="x"),
        ),
    ]
    sim.add(ANSWER)
    result = await Agent(model=make_model(sim, "responses")).run("go", history=history)
    assert result.status == "completed", result.error
    assert bodies(sim, "responses")[0]["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "q"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "hi"}],
        },
        {"role": "user", "content": [{"type": "input_text", "text": "go"}]},
    ]


# --- finish reasons and statuses ----------------------------------------------------------------

ECHO = call("echo", {"value": "x"})

STOP_CASES: list[Any] = [
    # (api, reply, status, outcome reason, raw stop reason, tool call answered "Not run")
    pytest.param(
        "chat",
        text("Done.", finish_reason="stop"),
        "completed",
        None,
        "stop",
        False,
        id="chat-stop",
    ),
    pytest.param(
        "chat",
        reply(text="Partial", tool_calls=[ECHO], finish_reason="length"),
        "incomplete",
        "output_limit",
        "length",
        True,
        id="chat-length",
    ),
    pytest.param(
        "chat",
        reply(text="Filtered", tool_calls=[ECHO], finish_reason="content_filter"),
        "completed",
        None,
        "content_filter",
        True,
        id="chat-content-filter",
    ),
    pytest.param(
        "chat",
        refusal("I can't help with that."),
        "completed",
        None,
        "refusal",
        False,
        id="chat-refusal",
    ),
    pytest.param(
        "responses", text("Done."), "completed", None, "end_turn", False, id="responses-completed"
    ),
    pytest.param(
        "responses",
        reply(text="Partial", tool_calls=[ECHO], incomplete_reason="max_output_tokens"),
        "incomplete",
        "output_limit",
        "max_output_tokens",
        True,
        id="responses-incomplete-max-output-tokens",
    ),
    pytest.param(
        "responses",
        reply(text="Filtered", tool_calls=[ECHO], incomplete_reason="content_filter"),
        "completed",
        None,
        "content_filter",
        True,
        id="responses-incomplete-content-filter",
    ),
    pytest.param(
        "responses",
        refusal("I can't help with that."),
        "completed",
        None,
        "refusal",
        False,
        id="responses-refusal",
    ),
]


@pytest.mark.parametrize(
    ("api", "scripted", "status", "reason", "stop_reason", "not_run"), STOP_CASES
)
@STREAMING
async def test_finish_reason_mapping(
    sim: OpenAISimulator,
    api: Api,
    scripted: ScriptItem,
    status: str,
    reason: str | None,
    stop_reason: str,
    not_run: bool,
    streaming: bool,
) -> None:
    calls = Calls()
    sim.add(scripted)
    result = await Agent(model=make_model(sim, api, streaming=streaming), tools=calls.tools()).run(
        "go"
    )

    assert result.status == status
    assert result.stop_reason == stop_reason
    assert result.error is None
    assert calls.log == []  # a limited, filtered or refused response's calls never run
    validate_complete_turns(result.turn.messages)
    if reason is None:
        assert result.outcome is None
        assert not ends_with_outcome_note(result.turn.messages)
    else:
        assert result.outcome is not None
        assert result.outcome.reason == reason
        assert result.outcome.next == "continue"
        assert result.outcome.error is None
        assert ends_with_outcome_note(result.turn.messages)
    answered = tool_results(result.turn.messages)
    if not_run:
        assert [result_text(r) for r in answered] == [NOT_RUN_TEXT]
        assert all(r.is_error for r in answered)
        if result.outcome is not None:
            assert [c.state for c in result.outcome.tool_calls] == ["not_started"]
    else:
        assert answered == []
    if stop_reason == "refusal":
        assert result.output_text == "I can't help with that."
    assert len(sim.requests) == 1


@pytest.mark.parametrize(
    ("code", "retried", "streaming"),
    [
        pytest.param("invalid_prompt", False, True, id="stream-invalid-prompt"),
        pytest.param("invalid_prompt", False, False, id="json-invalid-prompt"),
        pytest.param("server_error", True, True, id="stream-server-error"),
        pytest.param("server_error", True, False, id="json-server-error"),
    ],
)
async def test_responses_failed_status_is_retried_or_a_provider_error(
    sim: OpenAISimulator, code: str, retried: bool, streaming: bool
) -> None:
    """A ``failed`` response is an error: retried when its code is transient (server_error)."""
    sim.add(reply(error_code=code))
    if retried:
        sim.fallback = ANSWER  # the retry's answer (not scripted: a missed retry leaves no debt)
    result = await Agent(model=make_model(sim, "responses", streaming=streaming)).run("go")

    validate_complete_turns(result.turn.messages)
    if retried:
        assert result.status == "completed", result.error
        assert result.output_text == ANSWER
        assert len(sim.requests) == 2
        return
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    err = result.error
    assert isinstance(err, ProviderError)
    assert err.error_type == code
    assert err.provider == "openai"
    assert not err.retryable
    assert len(sim.requests) == 1
    assert ends_with_outcome_note(result.turn.messages)


# --- usage --------------------------------------------------------------------------------------


@API
@STREAMING
async def test_usage_buckets_and_cost(sim: OpenAISimulator, api: Api, streaming: bool) -> None:
    sim.add(
        text(
            "Cached answer.",
            input_tokens=2000,
            cached_tokens=1536,
            output_tokens=300,
            reasoning_tokens=200,
        )
    )
    result = await Agent(model=make_model(sim, api, streaming=streaming)).run("hi")
    assert result.status == "completed", result.error

    (per_call,) = message_usages(result)
    for u in (per_call, result.usage):
        assert u.known
        assert u.requests == 1
        # OpenAI's input total includes the cached tokens: dive takes them out.
        assert u.cache_read_input_tokens == 1536
        assert u.cache_creation_input_tokens == 0
        assert u.input_tokens == 2000 - 1536
        assert u.input_tokens + u.cache_read_input_tokens == 2000
        assert u.total_input_tokens == 2000
        # Reasoning tokens are a subset of the output, not added to it.
        assert u.output_tokens == 300
        assert u.reasoning_tokens == 200
        assert u.service_tier == "default"
        expected = api_cost(MODEL_OF[api], input_total=2000, cached=1536, output=300)
        assert u.cost is not None
        assert u.cost > 0
        assert u.cost == pytest.approx(expected)
    assert result.turn.usage.total_input_tokens == 2000


@API
@STREAMING
async def test_unknown_model_has_unknown_cost(
    sim: OpenAISimulator, api: Api, streaming: bool
) -> None:
    sim.add(text(ANSWER, input_tokens=50, output_tokens=7))
    model = make_model(sim, api, streaming=streaming, name="sim-local-model-7b")
    result = await Agent(model=model).run("hi")
    assert result.status == "completed", result.error
    (per_call,) = message_usages(result)
    for u in (per_call, result.usage):
        assert u.cost is None  # unknown, never a made-up zero
        assert u.known
        assert u.input_tokens == 50
        assert u.output_tokens == 7
    assert bodies(sim, api)[0]["model"] == "sim-local-model-7b"


@API
@STREAMING
async def test_automatic_prompt_caching_is_reported_in_disjoint_buckets(
    sim: OpenAISimulator, api: Api, streaming: bool
) -> None:
    """Prompts of 1024+ tokens are cached by the simulator; the second call reads the prefix."""
    calls = Calls()
    sim.add(tool_call("add", {"a": 1, "b": 2}), text("Three."))
    instructions = "You are a careful calculator. " * 200  # ~1500 tokens
    agent = Agent(
        model=make_model(sim, api, streaming=streaming),
        tools=calls.tools(),
        instructions=instructions,
    )
    result = await agent.run("add")
    assert result.status == "completed", result.error

    per_call = message_usages(result)
    sent = bodies(sim, api)
    assert len(per_call) == len(sent) == 2
    for usage, body in zip(per_call, sent, strict=True):
        # The buckets add up to the API's (simulated) prompt total, which includes cached tokens.
        assert usage.total_input_tokens == prompt_tokens(body)
        assert usage.input_tokens == (
            prompt_tokens(body) - usage.cache_read_input_tokens - usage.cache_creation_input_tokens
        )
        assert usage.cost is not None
    assert per_call[0].cache_read_input_tokens == 0
    assert per_call[1].cache_read_input_tokens > 0
    assert per_call[1].cache_read_input_tokens % 128 == 0
    assert result.usage.cache_read_input_tokens == per_call[1].cache_read_input_tokens


# --- retries and faults -------------------------------------------------------------------------

RETRYABLE: list[tuple[str, ScriptItem, bool]] = [
    # (id, fault, also applies to a non-streaming request)
    ("429-retry-after", SimFault(status=429, retry_after=1), True),
    ("429-retry-after-ms", SimFault(status=429, retry_after_ms=5), True),
    ("503", SimFault(status=503), True),
    ("504", SimFault(status=504), True),
    ("500-should-retry-true", SimFault(status=500, should_retry=True), True),
    ("cut-before-any-event", SimCut(after_events=0), True),
    ("cut-after-first-event", SimCut(after_events=1), True),
    # A non-streaming request gets HTTP 500 for a server_error, retried like any 5xx.
    ("stream-error-before-any-event", SimStreamError(after_events=0), True),
    ("stream-error-after-first-event", SimStreamError(after_events=1), True),
    (
        "stream-rate-limit-after-first-event",
        SimStreamError(after_events=1, code="rate_limit_exceeded", type="requests"),
        True,
    ),
]


def _retry_cases() -> list[Any]:
    cases: list[Any] = []
    for api in ("chat", "responses"):
        for name, fault, json_too in RETRYABLE:
            cases.append(pytest.param(api, fault, True, id=f"{api}-stream-{name}"))
            if json_too:
                cases.append(pytest.param(api, fault, False, id=f"{api}-json-{name}"))
    return cases


@pytest.mark.parametrize(("api", "fault", "streaming"), _retry_cases())
async def test_retryable_fault_is_retried_without_duplicated_text(
    sim: OpenAISimulator, api: Api, fault: ScriptItem, streaming: bool
) -> None:
    sim.add(fault, text(ANSWER))
    events = Events()
    started = time.monotonic()
    result = await Agent(model=make_model(sim, api, streaming=streaming)).run("hi", on_event=events)
    elapsed = time.monotonic() - started

    assert result.status == "completed", result.error
    assert result.error is None
    sent = bodies(sim, api)
    assert len(sent) == 2
    assert sent[0] == sent[1]  # the same request, resent
    assert result.output_text == ANSWER
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


@API
async def test_several_faults_in_a_row_then_success(sim: OpenAISimulator, api: Api) -> None:
    sim.add(
        SimFault(status=429, retry_after_ms=1),
        SimStreamError(after_events=1),
        SimFault(status=503),
        SimCut(after_events=0),
        text(ANSWER),
    )
    result = await Agent(model=make_model(sim, api)).run("hi")
    assert result.status == "completed", result.error
    assert len(sim.requests) == 5
    assert texts_of(result.turn.messages) == [ANSWER]


@API
@STREAMING
async def test_retries_stop_after_max_retries(
    sim: OpenAISimulator, api: Api, streaming: bool
) -> None:
    sim.add(SimFault(status=503), SimFault(status=503), SimFault(status=503))
    policy = RetryPolicy(max_retries=2, initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
    result = await Agent(model=make_model(sim, api, streaming=streaming, retry=policy)).run("hi")

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    assert isinstance(result.error, OverloadedError)
    assert result.error.status == 503
    assert len(sim.requests) == 3
    validate_complete_turns(result.turn.messages)


QUOTA = SimFault(status=429, code="insufficient_quota")

NOT_RETRIED: list[Any] = [
    pytest.param(QUOTA, RateLimitedError, 429, "insufficient_quota", id="429-insufficient-quota"),
    pytest.param(
        SimFault(status=429, code="insufficient_quota", should_retry=True),
        RateLimitedError,
        429,
        "insufficient_quota",
        id="429-insufficient-quota-should-retry-true",
    ),
    pytest.param(SimFault(status=401), AuthenticationError, 401, "invalid_api_key", id="401"),
    pytest.param(
        SimFault(status=500, should_retry=False),
        ProviderError,
        500,
        "server_error",
        id="500-should-retry-false",
    ),
    pytest.param(
        SimFault(status=503, should_retry=False),
        OverloadedError,
        503,
        "server_error",
        id="503-should-retry-false",
    ),
]


@pytest.mark.parametrize(("fault", "error_class", "status", "error_type"), NOT_RETRIED)
@API
@STREAMING
async def test_non_retryable_status_is_not_retried(
    sim: OpenAISimulator,
    fault: SimFault,
    error_class: type[ProviderError],
    status: int,
    error_type: str,
    api: Api,
    streaming: bool,
) -> None:
    sim.add(fault)
    result = await Agent(model=make_model(sim, api, streaming=streaming)).run("hi")

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    assert result.outcome.next == "continue"
    err = result.error
    assert type(err) is error_class
    assert isinstance(err, ProviderError)
    assert err.status == status
    assert err.error_type == error_type
    assert err.provider == "openai"
    assert err.request_id is not None
    assert err.request_id.startswith("req_")
    assert not err.retryable
    assert len(sim.requests) == 1  # a retry would have hit the exhausted script
    validate_complete_turns(result.turn.messages)
    assert ends_with_outcome_note(result.turn.messages)


def _after_content(api: Api) -> list[Any]:
    # Chat: the role chunk, then 16-character content deltas. Responses: created, in_progress,
    # output_item.added, content_part.added, then 16-character output_text deltas.
    events, deltas = (3, 2) if api == "chat" else (6, 2)
    return [
        pytest.param(
            api,
            SimStreamError(after_events=events, reply=text(LONG)),
            deltas,
            id=f"{api}-error-event",
        ),
        pytest.param(
            api,
            SimStreamError(
                after_events=events, code="rate_limit_exceeded", type="requests", reply=text(LONG)
            ),
            deltas,
            id=f"{api}-rate-limit-event",
        ),
        pytest.param(api, SimCut(after_events=events, reply=text(LONG)), deltas, id=f"{api}-cut"),
    ]


@pytest.mark.parametrize(
    ("api", "fault", "deltas"), [*_after_content("chat"), *_after_content("responses")]
)
async def test_failure_after_content_is_stream_interrupted_with_partial_text(
    sim: OpenAISimulator, api: Api, fault: ScriptItem, deltas: int
) -> None:
    sim.add(fault)
    events = Events()
    result = await Agent(model=make_model(sim, api)).run("hi", on_event=events)

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "stream_interrupted"
    assert result.outcome.next == "continue"
    assert result.outcome.usage_unknown
    assert isinstance(result.error, StreamInterruptedError)
    assert len(sim.requests) == 1  # not retried: text had reached the consumer
    partial = LONG[: CHUNK * deltas]
    assert events.streamed_text() == partial
    assert texts_of(result.turn.messages) == [partial]  # the partial text is kept
    validate_complete_turns(result.turn.messages)
    assert ends_with_outcome_note(result.turn.messages)


@API
async def test_truncated_stream_after_text_is_stream_interrupted(
    sim: OpenAISimulator, api: Api
) -> None:
    """Chat: no finish_reason, no usage chunk, no [DONE]; Responses: no terminal event."""
    sim.add(SimTruncated(reply=text(LONG)))
    result = await Agent(model=make_model(sim, api)).run("hi")

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "stream_interrupted"
    assert result.outcome.usage_unknown
    assert isinstance(result.error, StreamInterruptedError)
    assert result.usage.known is False
    assert len(sim.requests) == 1
    assert texts_of(result.turn.messages) == [LONG]  # every delta came; only the end was missing
    validate_complete_turns(result.turn.messages)
    assert ends_with_outcome_note(result.turn.messages)


@API
async def test_truncated_stream_before_content_is_retried(sim: OpenAISimulator, api: Api) -> None:
    """Nothing reached the consumer, so the attempt is retried inside the retry window."""
    # Chat: only the role chunk; Responses: only response.created and response.in_progress.
    sim.add(SimTruncated(after_events=1 if api == "chat" else 2), sim.text("second try"))
    result = await Agent(model=make_model(sim, api)).run("hi")

    assert result.status == "completed"
    assert len(sim.requests) == 2
    assert texts_of(result.turn.messages) == ["second try"]
    validate_complete_turns(result.turn.messages)


@API
async def test_truncated_stream_before_content_gives_up_after_the_retries(
    sim: OpenAISimulator, api: Api
) -> None:
    """Every attempt ends early: dive reports provider_error once the retries are spent."""
    for _ in range(3):
        sim.add(SimTruncated(after_events=1 if api == "chat" else 2))
    model = make_model(sim, api)
    model.retry = RetryPolicy(max_retries=2, initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
    result = await Agent(model=model).run("hi")

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    assert isinstance(result.error, StreamInterruptedError)
    assert len(sim.requests) == 3
    assert texts_of(result.turn.messages) == []
    validate_complete_turns(result.turn.messages)
    assert ends_with_outcome_note(result.turn.messages)


@API
async def test_truncated_stream_mid_arguments_drops_the_partial_call(
    sim: OpenAISimulator, api: Api
) -> None:
    calls = Calls()
    long_value = "abcdefghijklmnopqrstuvwxyz0123456789"
    # Chat: role chunk with the call header, then one arguments fragment. Responses: created,
    # in_progress, output_item.added (the call), one arguments delta.
    sim.add(
        SimTruncated(
            after_events=2 if api == "chat" else 4,
            reply=tool_call("echo", {"value": long_value}),
        )
    )
    result = await Agent(model=make_model(sim, api), tools=calls.tools()).run("hi")

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "stream_interrupted"
    assert isinstance(result.error, StreamInterruptedError)
    assert calls.log == []
    # A call whose JSON is incomplete is dropped; a message with nothing left is not recorded.
    assert calls_of(result.turn.messages) == []
    assert tool_results(result.turn.messages) == []
    validate_complete_turns(result.turn.messages)
    assert ends_with_outcome_note(result.turn.messages)


# --- 400 validation errors ----------------------------------------------------------------------


@STREAMING
async def test_chat_validation_400_is_an_invalid_request_error(
    sim: OpenAISimulator, streaming: bool
) -> None:
    # A tool result that answers no call: the API refuses the orphan tool message.
    history = [
        Message.user("q"),
        Message(
            role="tool",
            content=(ToolResult(tool_call_id="call_orphan", content=(TextBlock(text="3"),)),),
        ),
        Message.assistant("ok"),
    ]
    result = await Agent(model=make_model(sim, "chat", streaming=streaming)).run(
        "go", history=history
    )
    _check_invalid_request(
        sim,
        result,
        "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
        "invalid_request_error",
    )


@pytest.mark.parametrize("case", ["max-output-tokens", "forged-encrypted-content"])
@STREAMING
async def test_responses_validation_400_is_an_invalid_request_error(
    sim: OpenAISimulator, case: str, streaming: bool
) -> None:
    model = make_model(sim, "responses", streaming=streaming)
    if case == "max-output-tokens":
        agent = Agent(model=model, model_settings=ModelSettings(max_tokens=8))
        result = await agent.run("go")
        expected, code = "Invalid 'max_output_tokens'", "integer_below_min_value"
    else:
        forged: list[JSONValue] = [
            {"id": "rs_forged", "type": "reasoning", "summary": [], "encrypted_content": "forged"},
            {
                "id": "msg_forged",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "hi", "annotations": []}],
            },
        ]
        history = [
            Message.user("q"),
            Message(
                role="assistant",
                content=(TextBlock(text="hi"),),
                provider_state=ProviderState(provider="openai", api="responses", data=forged),
            ),
        ]
        result = await Agent(model=model).run("go", history=history)
        expected = "The encrypted content for item rs_forged could not be verified."
        code = "invalid_encrypted_content"
    _check_invalid_request(sim, result, expected, code)


def _check_invalid_request(
    sim: OpenAISimulator, result: RunResult[Any], message: str, error_type: str
) -> None:
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    err = result.error
    assert isinstance(err, InvalidRequestError)
    assert err.status == 400
    assert err.provider == "openai"
    assert err.error_type == error_type
    assert err.request_id is not None
    assert err.request_id.startswith("req_")
    assert message in str(err)
    assert not err.retryable
    assert len(sim.requests) == 1
    validate_complete_turns(result.turn.messages)
    assert ends_with_outcome_note(result.turn.messages)


# --- Chat stream end markers (a hand-made SSE body: the simulator always sends both) ------------


def _chunk(delta: Json, finish_reason: str | None = None, usage: Json | None = None) -> bytes:
    choices = [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    data = {
        "id": "chatcmpl-hand",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": CHAT_MODEL,
        "choices": choices,
        "usage": usage,
    }
    return f"data: {json.dumps(data)}\n\n".encode()


def _hand_made_chat_model(body: bytes) -> OpenAIChatModel:
    def handler(request: httpx2.Request) -> httpx2.Response:
        headers = {"content-type": "text/event-stream", "x-request-id": "req_hand"}
        return httpx2.Response(200, headers=headers, content=body)

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    client = openai.AsyncOpenAI(api_key="test", base_url="http://sim.invalid/v1", http_client=http)
    model = OpenAIChatModel(CHAT_MODEL, client=client, retry=FAST)
    _OPEN.append(model)
    return model


_ROLE = _chunk({"role": "assistant", "content": ""})
_HELLO = _chunk({"content": "Hello."})
_USAGE = _chunk({}, usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7})


async def test_chat_stream_with_finish_reason_but_no_done_completes() -> None:
    body = _ROLE + _HELLO + _chunk({}, "stop") + _USAGE  # EOF without [DONE]
    try:
        result = await Agent(model=_hand_made_chat_model(body)).run("hi")
    finally:
        while _OPEN:
            await _OPEN.pop().aclose()
    assert result.status == "completed", result.error
    assert result.output_text == "Hello."
    assert result.stop_reason == "stop"
    assert result.usage.output_tokens == 2


async def test_chat_stream_with_done_but_no_finish_reason_is_a_valid_end() -> None:
    body = _ROLE + _HELLO + _USAGE + b"data: [DONE]\n\n"
    try:
        result = await Agent(model=_hand_made_chat_model(body)).run("hi")
    finally:
        while _OPEN:
            await _OPEN.pop().aclose()
    assert result.status == "completed", result.error
    assert result.output_text == "Hello."


def _forbid_private_sse_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("dive read the SDK's private AsyncStream._iter_events")

    monkeypatch.setattr(openai.AsyncStream, "_iter_events", forbidden)


async def test_chat_stream_end_markers_through_public_sdk_api_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _forbid_private_sse_reader(monkeypatch)
    body = _ROLE + _HELLO + _USAGE + b"data: [DONE]\n\n"
    try:
        result = await Agent(model=_hand_made_chat_model(body)).run("hi")
    finally:
        while _OPEN:
            await _OPEN.pop().aclose()
    assert result.status == "completed", result.error
    assert result.output_text == "Hello."
    assert result.usage.output_tokens == 2


async def test_chat_stream_bare_eof_after_text_is_interrupted_through_public_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _forbid_private_sse_reader(monkeypatch)
    body = _ROLE + _HELLO  # no finish_reason, no [DONE]: the connection just ended
    try:
        result = await Agent(model=_hand_made_chat_model(body)).run("hi")
    finally:
        while _OPEN:
            await _OPEN.pop().aclose()
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "stream_interrupted"
    assert isinstance(result.error, StreamInterruptedError)
    assert texts_of(result.turn.messages) == ["Hello."]


async def test_chat_stream_multiline_sse_data_and_comments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _forbid_private_sse_reader(monkeypatch)
    split = _HELLO.replace(b'"content": "Hello."', b'"content":\ndata: "Hello."')
    body = b": keep-alive comment\n\n" + _ROLE + split + _chunk({}, "stop") + b"data: [DONE]\n\n"
    try:
        result = await Agent(model=_hand_made_chat_model(body)).run("hi")
    finally:
        while _OPEN:
            await _OPEN.pop().aclose()
    assert result.status == "completed", result.error
    assert result.output_text == "Hello."


# --- one session across providers ---------------------------------------------------------------

ANTHROPIC_MODEL = "claude-sonnet-4-6"
ANTHROPIC_THOUGHT = "I should add one and two first, then check the result carefully."
OPENAI_THOUGHT = "The user wants three plus four."


async def test_one_session_across_anthropic_responses_and_chat(sim: OpenAISimulator) -> None:
    calls = Calls()
    with anth.simulator(assert_consumed=True) as asim:
        asim.add(
            anth.reply(
                blocks=[
                    anth.thinking_block(ANTHROPIC_THOUGHT),
                    anth.text_block("Adding."),
                    anth.tool_use_block("add", {"a": 1, "b": 2}),
                ]
            ),
            anth.text("It is 3."),
            anth.text("All four answers are done."),
        )
        sim.add(
            reply(
                reasoning=[reasoning(OPENAI_THOUGHT)], tool_calls=[call("add", {"a": 3, "b": 4})]
            ),
            text("It is 7."),
            tool_call("add", {"a": 5, "b": 6}),
            text("It is 11."),
        )
        claude = AnthropicModel(ANTHROPIC_MODEL, base_url=asim.url, api_key="test", retry=FAST)
        _OPEN.append(claude)
        responses = make_model(sim, "responses")
        chat = make_model(sim, "chat")
        store = MemorySessionStore()
        session = store.session("cross-provider")
        agent = Agent(
            model=claude,
            tools=calls.tools(),
            session=session,
            model_settings=ModelSettings(
                thinking="enabled", reasoning_budget=2048, max_tokens=8000
            ),
        )

        outputs: list[str] = []
        for model, prompt in (
            (claude, "one plus two"),
            (responses, "three plus four"),
            (chat, "five plus six"),
            (claude, "summarize"),
        ):
            agent.model = model
            result = await agent.run(prompt)
            # Every simulator validates what it receives: a 400 would end the turn incomplete.
            assert result.status == "completed", (type(model).__name__, result.error)
            outputs.append(result.output_text)
        assert outputs == ["It is 3.", "It is 7.", "It is 11.", "All four answers are done."]
        assert calls.log == ["add(1,2)", "add(3,4)", "add(5,6)"]

        history = await session.messages()
        validate_complete_turns(history)
        thinking = [b for m in history for b in m.content if isinstance(b, ThinkingBlock)]
        assert [(b.provider, b.thinking) for b in thinking] == [
            ("anthropic", ANTHROPIC_THOUGHT),
            ("openai", OPENAI_THOUGHT),
        ]
        anthropic_signature = thinking[0].signature
        assert asim.issued_thinking(anthropic_signature) == ANTHROPIC_THOUGHT
        states = [m.provider_state for m in history if m.provider_state is not None]
        assert {(s.provider, s.api) for s in states} == {("openai", "responses")}

        # Anthropic: its own thinking comes back byte-identical; OpenAI's reasoning never does.
        a_sent = [r.body for r in asim.message_requests]
        assert len(a_sent) == 3
        last = a_sent[2]
        a_thinking = [
            b
            for m in last["messages"]
            if m["role"] == "assistant"
            for b in m["content"]
            if b["type"] in ("thinking", "redacted_thinking")
        ]
        assert a_thinking == [
            {"type": "thinking", "thinking": ANTHROPIC_THOUGHT, "signature": anthropic_signature}
        ]
        a_text = json.dumps(last)
        assert OPENAI_THOUGHT not in a_text
        assert "encrypted_content" not in a_text
        # The last tool-use turn (Chat's) has no thinking: thinking is omitted (messages.md §7.3).
        assert "thinking" not in last
        assert all("thinking" in body for body in a_sent[:2])

        # Responses: Anthropic's thinking is dropped; its own items are replayed.
        r_sent = bodies(sim, "responses")
        assert len(r_sent) == 2
        for body in r_sent:
            r_text = json.dumps(body)
            assert ANTHROPIC_THOUGHT not in r_text
            assert anthropic_signature not in r_text
        reasoning_items = [i for i in r_sent[1]["input"] if i.get("type") == "reasoning"]
        assert len(reasoning_items) == 1
        rs = reasoning_items[0]
        assert sim.issued_reasoning(rs["encrypted_content"]) == rs["id"]
        # Anthropic's turn is rebuilt from text and tool calls.
        assert item_types(r_sent[0]["input"][:5]) == [
            None,
            "message",
            "function_call",
            "function_call_output",
            "message",
        ]

        # Chat: no thinking, no provider state at all.
        c_sent = bodies(sim, "chat")
        assert len(c_sent) == 2
        for body in c_sent:
            c_text = json.dumps(body)
            assert ANTHROPIC_THOUGHT not in c_text
            assert OPENAI_THOUGHT not in c_text
            assert "encrypted_content" not in c_text
            assert rs["id"] not in c_text
            assert all(
                m["role"] in ("system", "user", "assistant", "tool") for m in body["messages"]
            )
        roles = [m["role"] for m in c_sent[0]["messages"]]
        assert roles == [
            "system",
            "user",  # one plus two (Anthropic)
            "assistant",
            "tool",
            "assistant",
            "user",  # three plus four (Responses)
            "assistant",
            "tool",
            "assistant",
            "user",  # five plus six
        ]


# --- registry presets ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "api", "provider", "key"),
    [
        pytest.param("ollama:qwen3", "chat", "ollama", "ollama", id="ollama"),
        pytest.param("openai-chat:gpt-4.1", "chat", "openai", "test", id="openai-chat"),
        pytest.param("openai:gpt-5", "responses", "openai", "test", id="openai"),
    ],
)
async def test_registry_presets_run_a_tool_loop(
    sim: OpenAISimulator,
    monkeypatch: pytest.MonkeyPatch,
    spec: str,
    api: Api,
    provider: str,
    key: str,
) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    options: dict[str, Any] = {"base_url": sim.url, "retry": FAST}
    if provider == "openai":
        options["api_key"] = "test"
    model = dive.model(spec, **options)
    assert isinstance(model, OpenAIChatModel if api == "chat" else OpenAIResponsesModel)
    _OPEN.append(model)
    assert model.provider == provider
    name = spec.split(":", 1)[1]
    assert model.name == name

    calls = Calls()
    sim.add(tool_call("add", {"a": 2, "b": 2}), text("Four."))
    result = await Agent(model=model, tools=calls.tools()).run("two plus two")

    assert result.status == "completed", result.error
    assert result.output_text == "Four."
    assert calls.log == ["add(2,2)"]
    validate_complete_turns(result.turn.messages)
    recorded = sim.chat_requests if api == "chat" else sim.responses_requests
    assert len(recorded) == 2
    assert len(sim.requests) == 2
    assert all(r.body["model"] == name for r in recorded)
    assert all(r.headers["authorization"] == f"Bearer {key}" for r in recorded)
    if provider == "ollama":
        assert result.usage.cost is None  # no price for a local model
    else:
        assert result.usage.cost is not None


async def test_structured_output_via_json_schema_on_both_apis(sim: OpenAISimulator) -> None:
    from dive.llm import ModelRequest, ModelSettings, collect
    from dive.messages import Message

    schema: dict[str, JSONValue] = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    settings = ModelSettings(response_schema=schema, response_schema_name="place")
    sim.add(sim.text('{"city": "Paris"}'), sim.text('{"city": "Lyon"}'))
    responses = OpenAIResponsesModel("gpt-5", base_url=sim.url, api_key="test")
    chat = OpenAIChatModel("gpt-4.1", base_url=sim.url, api_key="test")
    try:
        request = ModelRequest(messages=(Message.user("where?"),), settings=settings)
        first = await collect(responses, request)
        second = await collect(chat, request)
    finally:
        await responses.aclose()
        await chat.aclose()
    assert json.loads(first.text) == {"city": "Paris"}
    assert json.loads(second.text) == {"city": "Lyon"}
    assert sim.responses_requests[0].body["text"]["format"] == {
        "type": "json_schema",
        "name": "place",
        "schema": schema,
        "strict": True,
    }
    assert sim.chat_requests[0].body["response_format"]["json_schema"]["schema"] == schema


def test_replayed_function_calls_carry_rekeyed_call_ids() -> None:
    from dive.llm import ModelRequest
    from dive.providers.openai._responses import responses_request

    item: dict[str, JSONValue] = {
        "type": "function_call",
        "call_id": "dup",
        "name": "f",
        "arguments": "{}",
    }
    assistant = Message(
        role="assistant",
        content=(ToolCall(id="dup", name="f"), ToolCall(id="dup_2", name="f")),
        provider_state=ProviderState(
            provider="openai", api="responses", data=[item, {**item, "arguments": "{}"}]
        ),
    )
    history = (
        Message.user("go"),
        assistant,
        Message.tool(ToolResult(tool_call_id="dup", content=(TextBlock(text="1"),))),
        Message.tool(ToolResult(tool_call_id="dup_2", content=(TextBlock(text="2"),))),
    )
    body = responses_request(ModelRequest(messages=history), "gpt-5")
    calls = [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
    assert calls == ["dup", "dup_2"]
    assert outputs == ["dup", "dup_2"]
