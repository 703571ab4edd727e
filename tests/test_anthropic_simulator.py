"""The Anthropic Messages API simulator, driven through the official ``anthropic`` SDK."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Generator, Iterator
from contextlib import contextmanager
from typing import Any, cast

import anthropic
import httpx2
import pytest
from anthropic.types import Message

import dive.testing.anthropic as simpkg
from dive.testing.anthropic import (
    AnthropicSimulator,
    SimClock,
    SimCut,
    SimFault,
    SimMalformed,
    SimReply,
    SimStreamError,
    block_tokens,
    redacted_thinking_block,
    server_tool_use_block,
    simulator,
    text_block,
    thinking_block,
    tool_use_block,
)

MODEL = "claude-sonnet-4-6"  # not deprecated in the SDK; cache minimum 2048
SMALL = "sim-test-model"  # unknown model: cache minimum 1024 unless overridden
HI: Any = [{"role": "user", "content": "hi"}]  # Any: SDK TypedDicts and plain dicts mix


@pytest.fixture
def sim() -> Iterator[AnthropicSimulator]:
    with simulator(assert_consumed=True) as s:
        yield s


@pytest.fixture
def client(sim: AnthropicSimulator) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=sim.url, api_key="test", max_retries=0) as c:
        yield c


@pytest.fixture
async def aclient(sim: AnthropicSimulator) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(base_url=sim.url, api_key="test", max_retries=0) as c:
        yield c


@contextmanager
def sim_client(**options: Any) -> Generator[tuple[AnthropicSimulator, anthropic.Anthropic]]:
    """A simulator with a sync client (no retries)."""
    with (
        AnthropicSimulator(**options) as s,
        anthropic.Anthropic(base_url=s.url, api_key="test", max_retries=0) as c,
    ):
        yield s, c


def create(client: anthropic.Anthropic, **params: Any) -> Message:
    """``messages.create`` with defaults; ``temperature`` (no SDK 2.x argument) goes in the body."""
    params.setdefault("model", MODEL)
    params.setdefault("max_tokens", 2000 if "thinking" in params else 1000)
    params.setdefault("messages", HI)
    if "temperature" in params:
        params["extra_body"] = {"temperature": params.pop("temperature")}
    return cast(Message, client.messages.create(**params))


async def acreate(client: anthropic.AsyncAnthropic, **params: Any) -> Message:
    params.setdefault("model", MODEL)
    params.setdefault("max_tokens", 1000)
    params.setdefault("messages", HI)
    return cast(Message, await client.messages.create(**params))


def count(client: anthropic.Anthropic, **params: Any) -> int:
    params.setdefault("model", MODEL)
    params.setdefault("messages", HI)
    return client.messages.count_tokens(**params).input_tokens


async def stream_types(client: anthropic.AsyncAnthropic, seen: list[str]) -> None:
    """Iterate ``messages.stream`` recording event types (the SDK skips pings)."""
    async with client.messages.stream(model=MODEL, max_tokens=100, messages=HI) as stream:
        async for event in stream:
            seen.append(event.type)


async def created_stream_types(client: anthropic.AsyncAnthropic, seen: list[str]) -> None:
    """Iterate ``messages.create(stream=True)`` recording event types."""
    stream = await client.messages.create(model=MODEL, max_tokens=100, messages=HI, stream=True)
    async with stream:
        async for event in stream:
            seen.append(event.type)


def sync_stream_types(client: anthropic.Anthropic, seen: list[str]) -> None:
    with client.messages.stream(model=MODEL, max_tokens=100, messages=HI) as stream:
        for event in stream:
            seen.append(event.type)


def dumped(message: Message) -> list[dict[str, Any]]:
    return [block.model_dump(exclude_none=True) for block in message.content]


def usage_of(message: Message) -> dict[str, Any]:
    return message.usage.model_dump(exclude_none=True)


def raw_post(
    sim: AnthropicSimulator, path: str, body: object, *, method: str = "POST"
) -> tuple[int, dict[str, str], bytes]:
    """A request without the SDK, to see the exact bytes."""
    request = urllib.request.Request(
        sim.url + path,
        data=json.dumps(body).encode() if method == "POST" else None,
        method=method,
        headers={
            "x-api-key": "test",
            "anthropic-version": "2023-06-01",
            "content-type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            headers = {k.lower(): v for k, v in response.headers.items()}
            return response.status, headers, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def parse_sse(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Split an SSE body, checking the exact ``event: …\\ndata: …\\n\\n`` framing."""
    text = raw.decode()
    assert text.endswith("\n\n")
    events: list[tuple[str, dict[str, Any]]] = []
    for chunk in text.split("\n\n")[:-1]:
        lines = chunk.split("\n")
        assert len(lines) == 2, chunk
        assert lines[0].startswith("event: ")
        assert lines[1].startswith("data: ")
        name, data = lines[0][len("event: ") :], json.loads(lines[1][len("data: ") :])
        assert data["type"] == name
        events.append((name, data))
    return events


def rebuild(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Check the A6 invariants while rebuilding the message from its events."""
    names = [n for n, _ in events if n != "ping"]
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    start = events[0][1]["message"]
    assert start["content"] == []
    assert start["stop_reason"] is None
    assert start["usage"]["output_tokens"] >= 1
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        assert key in start["usage"]
    message: dict[str, Any] = {**start, "content": []}
    current: dict[str, Any] | None = None
    deltas: list[dict[str, Any]] = []
    for name, data in events[1:]:
        if name == "content_block_start":
            assert current is None
            assert data["index"] == len(message["content"])
            current, deltas = dict(data["content_block"]), []
        elif name == "content_block_delta":
            assert current is not None
            assert data["index"] == len(message["content"])
            deltas.append(data["delta"])
        elif name == "content_block_stop":
            assert current is not None
            message["content"].append(_apply_deltas(current, deltas))
            current = None
        elif name == "message_delta":
            assert data["delta"]["stop_reason"] is not None
            message.update(data["delta"])
            message["usage"] = {**message["usage"], **data["usage"]}
    assert current is None
    return message


def _apply_deltas(block: dict[str, Any], deltas: list[dict[str, Any]]) -> dict[str, Any]:
    kind = block["type"]
    if kind == "text":
        assert block["text"] == ""
        assert deltas
        block["text"] = "".join(d["text"] for d in deltas if d["type"] == "text_delta")
    elif kind in ("tool_use", "server_tool_use"):
        assert block["input"] == {}
        assert deltas[0] == {"type": "input_json_delta", "partial_json": ""}
        assert all(d["type"] == "input_json_delta" for d in deltas)
        block["input"] = json.loads("".join(d["partial_json"] for d in deltas))
    elif kind == "thinking":
        assert block["thinking"] == ""
        assert block["signature"] == ""
        assert [d["type"] for d in deltas].count("signature_delta") == 1
        assert deltas[-1]["type"] == "signature_delta"
        block["thinking"] = "".join(d["thinking"] for d in deltas[:-1])
        block["signature"] = deltas[-1]["signature"]
    else:
        assert deltas == []
    return block


# --- public surface ----------------------------------------------------------------------


def test_public_names() -> None:
    assert sorted(simpkg.__all__) == sorted(
        [
            "AnthropicSimulator",
            "Reply",
            "ScriptItem",
            "SimClock",
            "SimCut",
            "SimFault",
            "SimMalformed",
            "SimReply",
            "SimRequest",
            "SimStreamError",
            "block_tokens",
            "demo_brain",
            "redacted_thinking_block",
            "reply",
            "server_tool_use_block",
            "simulator",
            "text",
            "text_block",
            "thinking_block",
            "tool_use",
            "tool_use_block",
        ]
    )


def test_start_stop_and_url() -> None:
    sim = AnthropicSimulator().start()
    try:
        assert sim.url.startswith("http://127.0.0.1:")
        with pytest.raises(RuntimeError):
            sim.start()
    finally:
        sim.stop()
    sim.stop()  # idempotent


# --- non-streaming -------------------------------------------------------------------------


def test_text_reply(sim: AnthropicSimulator, client: anthropic.Anthropic) -> None:
    sim.add(sim.text("Hello there, how can I help you today?"))
    message = create(client)
    assert message.type == "message"
    assert message.id.startswith("msg_")
    assert message.role == "assistant"
    assert message.model == MODEL
    assert dumped(message) == [{"type": "text", "text": "Hello there, how can I help you today?"}]
    assert message.stop_reason == "end_turn"
    assert message.stop_sequence is None
    assert message.usage.output_tokens >= 1
    recorded = sim.requests[0]
    assert recorded.path == "/v1/messages"
    assert recorded["messages"] == HI
    assert dict(recorded)["model"] == MODEL
    assert "test" in (recorded.headers.get("x-api-key") or recorded.headers["authorization"])
    assert recorded.headers["anthropic-version"]


async def test_tool_use_replies_async(
    sim: AnthropicSimulator, aclient: anthropic.AsyncAnthropic
) -> None:
    blocks = [
        text_block("Checking both."),
        tool_use_block("get_weather", {"city": "Paris"}, id="toolu_01A"),
        tool_use_block(
            "get_time", {"zone": "Europe/Paris", "nested": {"a": [1, 2]}}, id="toolu_02B"
        ),
    ]
    sim.add(sim.reply(blocks=blocks), sim.tool_use("lookup", {"q": "x"}))
    message = await acreate(aclient)
    assert dumped(message) == blocks
    assert message.stop_reason == "tool_use"
    second = await acreate(aclient)
    block = second.content[0]
    assert block.type == "tool_use"
    assert block.id.startswith("toolu_")
    assert (block.name, block.input) == ("lookup", {"q": "x"})


def test_stop_sequence_details_and_usage_override(
    sim: AnthropicSimulator, client: anthropic.Anthropic
) -> None:
    sim.add(
        SimReply(content=[text_block("one two")], stop_reason="stop_sequence", stop_sequence="END"),
        SimReply(
            content=[text_block("no")],
            stop_reason="refusal",
            stop_details={"type": "refusal", "category": "cyber", "explanation": "nope"},
            usage={"output_tokens": 77},
        ),
        "plain string reply",
    )
    first = create(client, stop_sequences=["END"])
    assert (first.stop_reason, first.stop_sequence) == ("stop_sequence", "END")
    second = create(client)
    assert second.stop_reason == "refusal"
    assert second.stop_details is not None
    assert second.stop_details.category == "cyber"
    assert second.usage.output_tokens == 77
    assert dumped(create(client)) == [{"type": "text", "text": "plain string reply"}]


def test_callable_reply_sees_request(sim: AnthropicSimulator, client: anthropic.Anthropic) -> None:
    seen: list[dict[str, Any]] = []

    def answer(request: dict[str, Any]) -> str:
        seen.append(request)
        return f"you said {request['messages'][-1]['content']}"

    sim.add(answer)
    assert dumped(create(client, messages=[{"role": "user", "content": "ping"}]))[0]["text"] == (
        "you said ping"
    )
    assert seen[0]["model"] == MODEL


def test_callable_that_raises_answers_500(
    sim: AnthropicSimulator, client: anthropic.Anthropic
) -> None:
    def broken(request: dict[str, Any]) -> str:
        raise KeyError("oops")

    sim.add(broken)
    with pytest.raises(anthropic.InternalServerError) as caught:
        create(client)
    assert "KeyError" in str(caught.value.api_message)
    assert isinstance(sim.errors[0], KeyError)


def test_exhausted_script(sim: AnthropicSimulator, client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.InternalServerError) as caught:
        create(client)
    assert caught.value.status_code == 500
    assert caught.value.type == "api_error"
    assert "script is exhausted" in str(caught.value.api_message)
    assert caught.value.response.headers["x-should-retry"] == "false"


def test_assert_consumed() -> None:
    with (
        pytest.raises(AssertionError, match="1 scripted replies"),
        simulator(assert_consumed=True) as s,
    ):
        s.add("never requested")


def test_fallback_reply() -> None:
    with sim_client(fallback="always this") as (_, c):
        assert dumped(create(c))[0]["text"] == "always this"
        assert dumped(create(c))[0]["text"] == "always this"


# --- streaming -----------------------------------------------------------------------------


async def test_stream_helper_text_and_tools(
    sim: AnthropicSimulator, aclient: anthropic.AsyncAnthropic
) -> None:
    long_text = "The quick brown fox jumps over the lazy dog, " * 5
    blocks = [
        text_block(long_text),
        tool_use_block("search", {"query": 'ünïcödé "quotes"', "n": [1, 2, 3]}, id="toolu_S1"),
        tool_use_block("noargs", {}, id="toolu_S2"),
    ]
    sim.add(sim.reply(blocks=blocks))
    async with aclient.messages.stream(model=MODEL, max_tokens=1000, messages=HI) as stream:
        streamed = "".join([t async for t in stream.text_stream])
        final = await stream.get_final_message()
    assert streamed == long_text
    assert dumped(final) == blocks
    assert final.stop_reason == "tool_use"
    assert final.usage.output_tokens > 1


def test_create_stream_true_sync(sim: AnthropicSimulator, client: anthropic.Anthropic) -> None:
    sim.add(sim.text("streamed words here"))
    stream = client.messages.create(model=MODEL, max_tokens=100, messages=HI, stream=True)
    with stream:
        kinds = [event.type for event in stream]
    assert kinds[0] == "message_start"
    assert kinds[-2:] == ["message_delta", "message_stop"]
    assert "ping" not in kinds  # the SDK skips pings


def test_raw_sse_framing_and_order(sim: AnthropicSimulator) -> None:
    content = [
        thinking_block("First I consider the question at some length."),
        redacted_thinking_block("EmwKAhgBEgy3va3pzix/LafPsn4a"),
        text_block("Here is the answer, in several chunks of text."),
        server_tool_use_block("web_search", {"query": "weather"}, id="srvtoolu_1"),
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": [{"type": "web_search_result", "url": "https://x", "title": "X"}],
        },
        tool_use_block("get_weather", {"location": "Paris, France", "unit": "celsius"}),
    ]
    sim.add(SimReply(content=content, stop_reason="tool_use"))
    body: dict[str, Any] = {"model": MODEL, "max_tokens": 4000, "messages": HI, "stream": True}
    body["thinking"] = {"type": "enabled", "budget_tokens": 2000}
    status, headers, raw = raw_post(sim, "/v1/messages", body)
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["request-id"].startswith("req_")
    events = parse_sse(raw)
    assert ("ping", {"type": "ping"}) in events
    message = rebuild(events)
    assert message["stop_reason"] == "tool_use"
    rebuilt = message["content"]
    assert rebuilt[0]["thinking"] == content[0]["thinking"]
    assert rebuilt[0]["signature"].startswith("EqQB")
    assert rebuilt[1:5] == content[1:5]
    assert rebuilt[5]["input"] == content[5]["input"]
    assert rebuilt[5]["id"].startswith("toolu_")
    delta_usage = next(d for n, d in events if n == "message_delta")["usage"]
    assert delta_usage["output_tokens"] == message["usage"]["output_tokens"] > 1
    assert delta_usage["output_tokens_details"]["thinking_tokens"] >= 1


def test_stream_matches_non_stream(sim: AnthropicSimulator, client: anthropic.Anthropic) -> None:
    blocks = [text_block("same"), tool_use_block("t", {"a": 1}, id="toolu_X")]
    sim.add(sim.reply(blocks=blocks), sim.reply(blocks=blocks))
    plain = create(client)
    with client.messages.stream(model=MODEL, max_tokens=1000, messages=HI) as stream:
        streamed = stream.get_final_message()
    assert dumped(streamed) == dumped(plain) == blocks
    assert usage_of(streamed) == usage_of(plain)


def test_stream_carries_stop_details(sim: AnthropicSimulator, client: anthropic.Anthropic) -> None:
    details = {"type": "refusal", "category": "bio", "explanation": None}
    sim.add(SimReply(content=[text_block("I can't")], stop_reason="refusal", stop_details=details))
    with client.messages.stream(model=MODEL, max_tokens=10, messages=HI) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "refusal"
    assert final.stop_details is not None
    assert final.stop_details.model_dump() == details


def test_stream_without_pings(sim: AnthropicSimulator) -> None:
    sim.add(SimReply(content=[text_block("x")], pings=False))
    _, _, raw = raw_post(
        sim, "/v1/messages", {"model": MODEL, "max_tokens": 9, "messages": HI, "stream": True}
    )
    assert all(name != "ping" for name, _ in parse_sse(raw))


def test_reply_delays(sim: AnthropicSimulator, client: anthropic.Anthropic) -> None:
    sim.add(SimReply(content=[text_block("slow")], delay=0.05, event_delay=0.01))
    started = time.monotonic()
    with client.messages.stream(model=MODEL, max_tokens=10, messages=HI) as stream:
        assert stream.get_final_text() == "slow"
    assert time.monotonic() - started >= 0.05 + 0.01 * 7


def test_callable_returning_garbage(sim: AnthropicSimulator, client: anthropic.Anthropic) -> None:
    def garbage(request: dict[str, Any]) -> Any:
        return 42

    sim.add(garbage)
    with pytest.raises(anthropic.InternalServerError, match="reply or a fault"):
        create(client)
    assert isinstance(sim.errors[0], TypeError)


# --- thinking ------------------------------------------------------------------------------

THINKING: Any = {"type": "enabled", "budget_tokens": 1024}
WEATHER_TOOL: Any = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def test_thinking_round_trip_and_edit_detection(
    sim: AnthropicSimulator, client: anthropic.Anthropic
) -> None:
    sim.add(
        sim.reply(
            blocks=[
                thinking_block("I should call the weather tool."),
                tool_use_block("get_weather", {"city": "Paris"}, id="toolu_T1"),
            ]
        ),
        sim.text("Sunny."),
    )
    with client.messages.stream(
        model=MODEL, max_tokens=2000, thinking=THINKING, tools=[WEATHER_TOOL], messages=HI
    ) as stream:
        first = stream.get_final_message()
    thinking = first.content[0]
    assert thinking.type == "thinking"
    assert thinking.thinking == "I should call the weather tool."
    assert thinking.signature.startswith("EqQB")
    assert sim.issued_thinking(thinking.signature) == thinking.thinking
    result = {"type": "tool_result", "tool_use_id": "toolu_T1", "content": "sunny"}
    history: list[dict[str, Any]] = [
        HI[0],
        {"role": "assistant", "content": dumped(first)},
        {"role": "user", "content": [result]},
    ]
    with_thinking: dict[str, Any] = {
        "thinking": THINKING,
        "tools": [WEATHER_TOOL],
        "max_tokens": 2000,
    }
    assert dumped(create(client, messages=history, **with_thinking)) == [
        {"type": "text", "text": "Sunny."}
    ]
    edited = json.loads(json.dumps(history))
    edited[1]["content"][0]["thinking"] = "I should call the weather tool!"
    with pytest.raises(anthropic.BadRequestError) as caught:
        create(client, messages=edited, **with_thinking)
    assert caught.value.api_message == (
        "messages.1.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant "
        "message cannot be modified. These blocks must remain as they were in the original "
        "response."
    )


def test_scripted_signature_is_kept_and_remembered(
    sim: AnthropicSimulator, client: anthropic.Anthropic
) -> None:
    sim.add(sim.reply(blocks=[thinking_block("hmm", signature="EqQBscripted"), text_block("a")]))
    message = create(client, thinking=THINKING, max_tokens=2000)
    assert dumped(message)[0] == {
        "type": "thinking",
        "thinking": "hmm",
        "signature": "EqQBscripted",
    }
    assert sim.issued_thinking("EqQBscripted") == "hmm"


async def test_redacted_thinking_and_omitted_display(
    sim: AnthropicSimulator, aclient: anthropic.AsyncAnthropic
) -> None:
    blocks = [
        redacted_thinking_block("opaque-data"),
        thinking_block(""),
        text_block("done"),
    ]
    sim.add(sim.reply(blocks=blocks))
    thinking = {"type": "enabled", "budget_tokens": 1024, "display": "omitted"}
    async with aclient.messages.stream(
        model=MODEL, max_tokens=2000, thinking=cast(Any, thinking), messages=HI
    ) as stream:
        final = await stream.get_final_message()
    out = dumped(final)
    assert out[0] == {"type": "redacted_thinking", "data": "opaque-data"}
    assert out[1]["thinking"] == ""
    assert out[1]["signature"].startswith("EqQB")
    assert out[2] == {"type": "text", "text": "done"}


# --- validation ----------------------------------------------------------------------------


def _tool_use(id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": "get_weather", "input": {"city": "Paris"}}


def _result(id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id, "content": "ok"}


CC = {"type": "ephemeral"}
CC_1H = {"type": "ephemeral", "ttl": "1h"}

VALIDATION_CASES: list[tuple[str, dict[str, Any], str]] = [
    (
        "unanswered_tool_use",
        {
            "messages": [
                HI[0],
                {"role": "assistant", "content": [_tool_use("toolu_012J8h8haek153rhp37X1S6d")]},
                {"role": "user", "content": "and?"},
            ]
        },
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_012J8h8haek153rhp37X1S6d. Each `tool_use` block must have a corresponding "
        "`tool_result` block in the next message.",
    ),
    (
        "orphan_tool_result",
        {
            "messages": [
                HI[0],
                {"role": "assistant", "content": "hello"},
                {"role": "user", "content": [_result("toolu_019ETtGZEhTBXgWPVsdVnXMh")]},
            ]
        },
        "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
        "toolu_019ETtGZEhTBXgWPVsdVnXMh. Each `tool_result` block must have a corresponding "
        "`tool_use` block in the previous message.",
    ),
    (
        "five_breakpoints",
        {
            "system": [{"type": "text", "text": f"s{i}", "cache_control": CC} for i in range(3)],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "a", "cache_control": CC},
                        {"type": "text", "text": "b", "cache_control": CC},
                    ],
                }
            ],
        },
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    ),
    (
        "ttl_order",
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "a", "cache_control": CC},
                        {"type": "text", "text": "b"},
                        {"type": "text", "text": "c"},
                        {"type": "text", "text": "d"},
                        {"type": "text", "text": "e", "cache_control": CC_1H},
                    ],
                }
            ]
        },
        "messages.0.content.4.cache_control.ttl: a ttl='1h' cache_control block must not come "
        "after a ttl='5m' cache_control block. Note that blocks are processed in the following "
        "order: `tools`, `system`, `messages`.",
    ),
    (
        "thinking_with_tool_choice_any",
        {"thinking": THINKING, "tools": [WEATHER_TOOL], "tool_choice": {"type": "any"}},
        "Thinking may not be enabled when tool_choice forces tool use.",
    ),
    (
        "thinking_with_tool_choice_tool",
        {
            "thinking": THINKING,
            "tools": [WEATHER_TOOL],
            "tool_choice": {"type": "tool", "name": "get_weather"},
        },
        "Thinking may not be enabled when tool_choice forces tool use.",
    ),
    (
        "budget_not_below_max_tokens",
        {"thinking": {"type": "enabled", "budget_tokens": 2000}, "max_tokens": 2000},
        "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
        "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
        "#max-tokens-and-context-window-size",
    ),
    (
        "budget_below_1024",
        {"thinking": {"type": "enabled", "budget_tokens": 1023}},
        "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
    ),
    (
        "temperature_with_thinking",
        {"thinking": THINKING, "temperature": 0.5},
        "`temperature` may only be set to 1 when thinking is enabled. Please consult our "
        "documentation at https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking"
        "#important-considerations-when-using-extended-thinking",
    ),
    (
        "final_assistant_without_thinking",
        {
            "thinking": THINKING,
            "tools": [WEATHER_TOOL],
            "messages": [
                HI[0],
                {"role": "assistant", "content": [_tool_use("toolu_1")]},
                {"role": "user", "content": [_result("toolu_1")]},
            ],
        },
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        "`tool_use`. When `thinking` is enabled, a final `assistant` message must start with a "
        "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
        "recommend you include thinking blocks from previous turns. To avoid this requirement, "
        "disable `thinking`. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
    ),
    (
        "enabled_on_adaptive_only_model",
        {"model": "claude-opus-4-8", "thinking": THINKING},
        '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" '
        'and "output_config.effort" to control thinking behavior.',
    ),
    (
        "temperature_deprecated",
        {"model": "claude-opus-4-7", "temperature": 0.2},
        "`temperature` is deprecated for this model.",
    ),
    (
        "cache_control_on_thinking",
        {
            "messages": [
                HI[0],
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "t", "signature": "s", "cache_control": CC}
                    ],
                },
                {"role": "user", "content": "more"},
            ]
        },
        "messages.1.content.0.thinking.cache_control: Extra inputs are not permitted",
    ),
    (
        "bad_tool_name",
        {"tools": [{**WEATHER_TOOL, "name": "bad name!"}]},
        "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
    ),
]


@pytest.mark.parametrize(
    ("params", "expected"),
    [(params, expected) for _, params, expected in VALIDATION_CASES],
    ids=[name for name, _, _ in VALIDATION_CASES],
)
def test_validation_errors(
    sim: AnthropicSimulator, client: anthropic.Anthropic, params: dict[str, Any], expected: str
) -> None:
    sim.add("not consumed by a rejected request")
    with pytest.raises(anthropic.BadRequestError) as caught:
        create(client, **params)
    error = caught.value
    assert error.api_message == expected
    assert error.type == "invalid_request_error"
    body = cast(dict[str, Any], error.body)
    assert body["type"] == "error"
    assert body["error"] == {"type": "invalid_request_error", "message": expected}
    assert body["request_id"] == error.request_id
    assert error.request_id is not None
    assert error.request_id.startswith("req_")
    assert sim.pending == 1
    create(client)  # the valid request takes the reply


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("model", "model: Field required"),
        ("max_tokens", "max_tokens: Field required"),
        ("messages", "messages: Field required"),
    ],
)
def test_required_fields(client: anthropic.Anthropic, missing: str, message: str) -> None:
    body: dict[str, Any] = {"model": MODEL, "max_tokens": 10, "messages": HI}
    del body[missing]
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.post("/v1/messages", body=body, cast_to=Message)
    assert caught.value.api_message == message


def test_invalid_json_body(sim: AnthropicSimulator) -> None:
    request = urllib.request.Request(
        sim.url + "/v1/messages", data=b"{nope", method="POST", headers={"x-api-key": "k"}
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    with caught.value as error:
        assert error.code == 400
        body = json.loads(error.read())
    assert body["error"]["type"] == "invalid_request_error"
    assert "error parsing the body" in body["error"]["message"]


def test_roles_merge_by_default_and_strict_mode_rejects() -> None:
    messages = [
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "c"},
    ]
    with AnthropicSimulator() as lenient:
        lenient.add("merged")
        with anthropic.Anthropic(base_url=lenient.url, api_key="t", max_retries=0) as c:
            assert dumped(create(c, messages=messages))[0]["text"] == "merged"
    with sim_client(strict_roles=True) as (_, c):
        with pytest.raises(anthropic.BadRequestError) as caught:
            create(c, messages=messages)
        assert caught.value.api_message is not None
        assert caught.value.api_message.startswith(
            'messages: roles must alternate between "user" and "assistant"'
        )
        with pytest.raises(anthropic.BadRequestError, match="first message"):
            create(c, messages=[{"role": "assistant", "content": "x"}])


def test_merged_messages_keep_original_indexes(client: anthropic.Anthropic) -> None:
    messages = [
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": [_tool_use("toolu_M")]},
        {"role": "user", "content": "no result"},
    ]
    with pytest.raises(anthropic.BadRequestError) as caught:
        create(client, messages=messages)
    assert str(caught.value.api_message).startswith("messages.2: `tool_use` ids")


def test_count_tokens_validates(client: anthropic.Anthropic) -> None:
    messages = [
        HI[0],
        {"role": "assistant", "content": "x"},
        {"role": "user", "content": [_result("toolu_Q")]},
    ]
    with pytest.raises(anthropic.BadRequestError, match="unexpected `tool_use_id`"):
        count(client, messages=messages)


# --- faults --------------------------------------------------------------------------------


def test_rate_limit_with_retry_headers(
    sim: AnthropicSimulator, client: anthropic.Anthropic
) -> None:
    sim.add(SimFault(status=429, retry_after=2.5, retry_after_ms=2500, should_retry=True))
    with pytest.raises(anthropic.RateLimitError) as caught:
        create(client)
    error = caught.value
    headers = error.response.headers
    assert headers["retry-after"] == "2.5"
    assert headers["retry-after-ms"] == "2500"
    assert headers["x-should-retry"] == "true"
    assert error.type == "rate_limit_error"
    assert error.request_id == headers["request-id"]


@pytest.mark.parametrize(
    ("status", "exception", "error_type"),
    [
        (529, anthropic.OverloadedError, "overloaded_error"),
        (500, anthropic.InternalServerError, "api_error"),
        (503, anthropic.InternalServerError, "api_error"),
        (504, anthropic.InternalServerError, "timeout_error"),
        (401, anthropic.AuthenticationError, "authentication_error"),
        (413, anthropic.RequestTooLargeError, "request_too_large"),
    ],
)
def test_status_faults(
    sim: AnthropicSimulator,
    client: anthropic.Anthropic,
    status: int,
    exception: type[anthropic.APIStatusError],
    error_type: str,
) -> None:
    sim.add(SimFault(status=status))
    with pytest.raises(exception) as caught:
        create(client)
    assert caught.value.status_code == status
    assert caught.value.type == error_type
    if status == 529:
        assert caught.value.api_message == "Overloaded"


def test_fault_at_head_precedes_validation(
    sim: AnthropicSimulator, client: anthropic.Anthropic
) -> None:
    sim.add(SimFault(status=529, message="busy", error_type="overloaded_error"))
    with pytest.raises(anthropic.OverloadedError, match="busy"):
        create(client, thinking={"type": "enabled", "budget_tokens": 5})


def test_sdk_retries_honour_headers() -> None:
    with AnthropicSimulator() as s:
        s.add(SimFault(status=529, retry_after_ms=1), "recovered")
        s.add(SimFault(status=529, should_retry=False))
        with anthropic.Anthropic(base_url=s.url, api_key="test", max_retries=2) as c:
            assert dumped(create(c))[0]["text"] == "recovered"
            assert len(s.message_requests) == 2
            with pytest.raises(anthropic.OverloadedError):
                create(c)
            assert len(s.message_requests) == 3


async def test_stream_error_event(
    sim: AnthropicSimulator, aclient: anthropic.AsyncAnthropic
) -> None:
    sim.add(SimStreamError(after_events=3, reply=sim.text("partial text " * 4)))
    seen: list[str] = []
    with pytest.raises(anthropic.APIStatusError) as caught:
        await stream_types(aclient, seen)
    assert caught.value.status_code == 200
    body = cast(dict[str, Any], caught.value.body)
    assert body["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    assert seen[:3] == ["message_start", "content_block_start", "content_block_delta"]


def test_stream_error_raw_and_non_streaming(
    sim: AnthropicSimulator, client: anthropic.Anthropic
) -> None:
    sim.add(SimStreamError(after_events=1, error_type="api_error", message="boom"))
    sim.add(SimStreamError(after_events=1))
    _, _, raw = raw_post(
        sim, "/v1/messages", {"model": MODEL, "max_tokens": 9, "messages": HI, "stream": True}
    )
    events = parse_sse(raw)
    assert [n for n, _ in events] == ["message_start", "error"]
    assert events[1][1]["error"] == {"type": "api_error", "message": "boom"}
    with pytest.raises(anthropic.OverloadedError):
        create(client)


async def test_cut_stream(sim: AnthropicSimulator, aclient: anthropic.AsyncAnthropic) -> None:
    sim.add(SimCut(after_events=2))
    seen: list[str] = []
    with pytest.raises((httpx2.TransportError, anthropic.APIConnectionError)):
        await created_stream_types(aclient, seen)
    assert seen == ["message_start", "content_block_start"]


def test_cut_non_streaming(sim: AnthropicSimulator, client: anthropic.Anthropic) -> None:
    sim.add(SimCut())
    with pytest.raises((httpx2.TransportError, anthropic.APIConnectionError)):
        create(client)


def test_malformed(sim: AnthropicSimulator, client: anthropic.Anthropic) -> None:
    sim.add(SimMalformed(), SimMalformed(after_events=1))
    with pytest.raises(json.JSONDecodeError):
        create(client)
    seen: list[str] = []
    with pytest.raises(json.JSONDecodeError):
        sync_stream_types(client, seen)
    assert seen == ["message_start"]


def test_request_id_on_every_response(sim: AnthropicSimulator, client: anthropic.Anthropic) -> None:
    sim.add("a", "b", SimFault(status=500))
    ids: list[str] = []
    raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=9, messages=HI)
    ids.append(raw.headers["request-id"])
    with client.messages.stream(model=MODEL, max_tokens=9, messages=HI) as stream:
        stream.until_done()
        ids.append(stream.response.headers["request-id"])
    with pytest.raises(anthropic.InternalServerError) as caught:
        create(client)
    ids.append(str(caught.value.request_id))
    with pytest.raises(anthropic.BadRequestError) as bad:
        create(client, messages=[])
    ids.append(str(bad.value.request_id))
    counted = client.messages.with_raw_response.count_tokens(model=MODEL, messages=HI)
    ids.append(counted.headers["request-id"])
    status, headers, body = raw_post(sim, "/v1/nothing", {})
    assert status == 404
    assert json.loads(body)["error"]["type"] == "not_found_error"
    ids.append(headers["request-id"])
    status, headers, _ = raw_post(sim, "/v1/messages", None, method="GET")
    assert status == 404
    ids.append(headers["request-id"])
    assert all(i.startswith("req_") for i in ids)
    assert len(set(ids)) == len(ids)


def test_missing_api_key(sim: AnthropicSimulator) -> None:
    request = urllib.request.Request(
        sim.url + "/v1/messages", data=json.dumps({}).encode(), method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    with caught.value as error:
        assert error.code == 401
        assert json.loads(error.read())["error"]["type"] == "authentication_error"


def test_body_too_large() -> None:
    with sim_client(max_body_bytes=1000) as (_, c):
        with pytest.raises(anthropic.RequestTooLargeError) as caught:
            create(c, messages=[{"role": "user", "content": "x" * 2000}])
        assert caught.value.type == "request_too_large"


# --- token counting ------------------------------------------------------------------------


def test_count_tokens_is_deterministic(
    sim: AnthropicSimulator, client: anthropic.Anthropic
) -> None:
    # {"text":"hi","type":"text"} is 27 bytes → 7 tokens.
    assert count(client) == 7
    assert block_tokens({"type": "text", "text": "hi", "cache_control": CC}) == 7
    system = "You are terse. " * 20
    params: dict[str, Any] = {"system": system, "tools": [WEATHER_TOOL]}
    total = count(client, **params)
    expected = (
        block_tokens(WEATHER_TOOL)
        + block_tokens({"type": "text", "text": system})
        + block_tokens({"type": "text", "text": "hi"})
    )
    assert total == expected
    sim.add("ok")
    usage = create(client, **params).usage
    assert usage.input_tokens == total


def test_output_tokens_follow_content(sim: AnthropicSimulator, client: anthropic.Anthropic) -> None:
    block = text_block("x" * 400)
    sim.add(sim.reply(blocks=[block]), sim.text(""))
    assert create(client).usage.output_tokens == block_tokens(block)
    assert create(client).usage.output_tokens >= 1


# --- prompt caching ------------------------------------------------------------------------


def big(label: str, tokens: int) -> str:
    """Text of about ``tokens`` simulated tokens."""
    return (label + " ")[:1] * (tokens * 4)


def cached_text(text: str, ttl: str | None = None) -> dict[str, Any]:
    marker: dict[str, Any] = {"type": "ephemeral"}
    if ttl:
        marker["ttl"] = ttl
    return {"type": "text", "text": text, "cache_control": marker}


def cache_numbers(message: Message) -> tuple[int, int, int]:
    u = message.usage
    return u.input_tokens, u.cache_creation_input_tokens or 0, u.cache_read_input_tokens or 0


def check_identity(message: Message, total: int) -> None:
    u = message.usage
    creation = u.cache_creation
    assert creation is not None
    assert u.cache_creation_input_tokens == (
        creation.ephemeral_5m_input_tokens + creation.ephemeral_1h_input_tokens
    )
    assert (
        u.input_tokens + (u.cache_creation_input_tokens or 0) + (u.cache_read_input_tokens or 0)
        == total
    )


def test_multi_turn_writes_then_reads(sim: AnthropicSimulator, client: anthropic.Anthropic) -> None:
    system = [cached_text(big("s", 3000))]
    sim.add("first answer", "second answer", "third answer")
    turn1: list[dict[str, Any]] = [{"role": "user", "content": [cached_text("question one")]}]
    first = create(client, system=system, messages=turn1)
    total1 = count(client, system=system, messages=turn1)
    check_identity(first, total1)
    assert cache_numbers(first) == (0, total1, 0)

    turn2 = [
        {"role": "user", "content": [text_block("question one")]},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": [cached_text("question two")]},
    ]
    second = create(client, system=system, messages=turn2)
    total2 = count(client, system=system, messages=turn2)
    check_identity(second, total2)
    assert second.usage.cache_read_input_tokens == total1
    assert second.usage.cache_creation_input_tokens == total2 - total1
    assert second.usage.input_tokens == 0

    # The same prompt with text after the last breakpoint reads everything cached.
    turn3 = [*turn2, {"role": "assistant", "content": "x"}, {"role": "user", "content": "tail"}]
    with client.messages.stream(
        model=MODEL, max_tokens=10, system=cast(Any, system), messages=cast(Any, turn3)
    ) as stream:
        third = stream.get_final_message()
    total3 = count(client, system=system, messages=turn3)
    check_identity(third, total3)
    assert third.usage.cache_read_input_tokens == total2
    assert third.usage.cache_creation_input_tokens == 0
    assert third.usage.input_tokens == total3 - total2


def test_lookback_is_twenty_blocks(client: anthropic.Anthropic) -> None:
    def blocks(n: int, marked: set[int]) -> list[dict[str, Any]]:
        return [
            cached_text(f"block {i:02d}") if i in marked else text_block(f"block {i:02d}")
            for i in range(1, n + 1)
        ]

    def ask(c: anthropic.Anthropic, n: int, marked: set[int]) -> Message:
        return create(c, model=SMALL, messages=[{"role": "user", "content": blocks(n, marked)}])

    with sim_client(min_cacheable_tokens={SMALL: 1}, fallback="ok") as (_, c):
        per_block = block_tokens(text_block("block 01"))
        turn1 = ask(c, 10, {10})
        assert cache_numbers(turn1) == (0, 10 * per_block, 0)
        turn2 = ask(c, 15, {15})  # hits turn 1's entry at block 10
        assert cache_numbers(turn2) == (0, 5 * per_block, 10 * per_block)
        turn3 = ask(c, 35, {35})  # checks 35…16: misses the entry at 15
        assert cache_numbers(turn3) == (0, 35 * per_block, 0)
        # A second breakpoint within 20 blocks of 15 finds it again.
        turn4 = ask(c, 36, {30, 36})
        assert turn4.usage.cache_read_input_tokens == 35 * per_block


def test_below_minimum_is_not_cached(client: anthropic.Anthropic, sim: AnthropicSimulator) -> None:
    sim.add("a", "b")
    messages = [{"role": "user", "content": [cached_text(big("q", 1500))]}]
    total = count(client, messages=messages)
    assert 1500 <= total < 2048  # below Sonnet 4.6's minimum
    for _ in range(2):
        assert cache_numbers(create(client, messages=messages)) == (total, 0, 0)


def test_minimum_is_configurable() -> None:
    messages = [{"role": "user", "content": [cached_text(big("q", 1500))]}]
    with sim_client(min_cacheable_tokens={"claude-sonnet-4-6": 1000}, fallback="ok") as (_, c):
        total = count(c, messages=messages)
        assert cache_numbers(create(c, messages=messages)) == (0, total, 0)
        assert cache_numbers(create(c, messages=messages)) == (0, 0, total)


def test_one_hour_and_five_minute_split(
    sim: AnthropicSimulator, client: anthropic.Anthropic
) -> None:
    tool = {**WEATHER_TOOL, "description": big("d", 2500), "cache_control": CC_1H}
    system = [cached_text(big("s", 1000))]
    sim.add("a", "b")
    first = create(client, tools=[tool], system=system)
    tool_tokens = block_tokens(tool)
    system_tokens = block_tokens(system[0])
    creation = first.usage.cache_creation
    assert creation is not None
    assert creation.ephemeral_1h_input_tokens == tool_tokens
    assert creation.ephemeral_5m_input_tokens == system_tokens
    assert first.usage.cache_creation_input_tokens == tool_tokens + system_tokens
    assert first.usage.input_tokens == block_tokens(text_block("hi"))
    second = create(client, tools=[tool], system=system)
    assert second.usage.cache_read_input_tokens == tool_tokens + system_tokens


def test_ttl_expiry_and_refresh(client: anthropic.Anthropic) -> None:
    clock = SimClock()
    messages = [{"role": "user", "content": [cached_text(big("m", 3000))]}]
    tools = [{**WEATHER_TOOL, "description": big("t", 2100), "cache_control": CC_1H}]
    with sim_client(clock=clock, fallback="ok") as (_, c):
        total = count(c, messages=messages)
        assert cache_numbers(create(c, messages=messages)) == (0, total, 0)
        clock.advance(299)
        assert cache_numbers(create(c, messages=messages)) == (0, 0, total)  # refreshed
        clock.advance(299)
        assert cache_numbers(create(c, messages=messages)) == (0, 0, total)
        clock.advance(301)
        assert cache_numbers(create(c, messages=messages)) == (0, total, 0)  # expired

        create(c, tools=tools, messages=messages)
        clock.advance(1800)  # the 1h tool entry survives, the 5m message entry does not
        later = create(c, tools=tools, messages=messages)
        assert later.usage.cache_read_input_tokens == block_tokens(tools[0])
        assert later.usage.cache_creation_input_tokens == total


def test_tier_parameters_invalidate_later_tiers(
    sim: AnthropicSimulator, client: anthropic.Anthropic
) -> None:
    system = [cached_text(big("s", 2100))]
    messages = [{"role": "user", "content": [cached_text(big("u", 500))]}]
    system_tokens = block_tokens(system[0])
    total = count(client, system=system, messages=messages)
    sim.add("a", "b", "c")
    create(client, system=system, messages=messages)
    # A thinking change invalidates the messages tier only.
    changed = create(client, system=system, messages=messages, thinking=THINKING, max_tokens=2000)
    assert cache_numbers(changed) == (0, total - system_tokens, system_tokens)
    # A system change invalidates system and messages.
    other = [cached_text(big("S", 2100))]
    assert cache_numbers(create(client, system=other, messages=messages))[2] == 0


def test_automatic_caching_and_prewarm(
    sim: AnthropicSimulator, client: anthropic.Anthropic
) -> None:
    messages = [{"role": "user", "content": big("p", 2500)}]
    total = count(client, messages=messages)
    warm = create(client, messages=messages, max_tokens=0, extra_body={"cache_control": CC})
    assert warm.content == []
    assert warm.stop_reason == "max_tokens"
    assert cache_numbers(warm) == (0, total, 0)
    assert sim.pending == 0  # a pre-warm consumes no reply
    sim.add("hello")
    hot = create(client, messages=messages, extra_body={"cache_control": CC})
    assert cache_numbers(hot) == (0, 0, total)


async def test_concurrent_identical_requests_all_miss(sim: AnthropicSimulator) -> None:
    barrier = threading.Barrier(2, timeout=10)

    def wait_for_both(request: dict[str, Any]) -> str:
        barrier.wait()
        return "together"

    sim.add(wait_for_both, wait_for_both, "after")
    messages = [{"role": "user", "content": [cached_text(big("c", 2500))]}]
    async with anthropic.AsyncAnthropic(base_url=sim.url, api_key="test", max_retries=0) as c:
        first, second = await asyncio.gather(
            acreate(c, messages=messages), acreate(c, messages=messages)
        )
        counted = await c.messages.count_tokens(model=MODEL, messages=cast(Any, messages))
        total = counted.input_tokens
        assert cache_numbers(first) == cache_numbers(second) == (0, total, 0)
        third = await acreate(c, messages=messages)
        assert cache_numbers(third) == (0, 0, total)


def test_stream_message_start_reports_cache(
    sim: AnthropicSimulator, client: anthropic.Anthropic
) -> None:
    messages = [{"role": "user", "content": [cached_text(big("z", 2500))]}]
    sim.add("a", "b")
    create(client, messages=messages)
    body = {"model": MODEL, "max_tokens": 9, "messages": messages, "stream": True}
    _, _, raw = raw_post(sim, "/v1/messages", body)
    start = parse_sse(raw)[0][1]["message"]["usage"]
    assert start["cache_read_input_tokens"] > 2500
    assert start["cache_creation"] == {
        "ephemeral_5m_input_tokens": 0,
        "ephemeral_1h_input_tokens": 0,
    }


# --- command line --------------------------------------------------------------------------


def test_module_entry_point_serves_until_interrupted() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "dive.testing.anthropic", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        with anthropic.Anthropic(base_url=url, api_key="test", max_retries=0) as c:
            answer = create(c, messages=[{"role": "user", "content": "marco"}])
        assert dumped(answer) == [{"type": "text", "text": "echo: marco"}]
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
        if process.stdout is not None:
            process.stdout.close()


def test_module_entry_point_with_the_demo_brain() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "dive.testing.anthropic", "--port", "0", "--demo"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        with anthropic.Anthropic(base_url=url, api_key="test", max_retries=0) as c:
            answer = create(c, messages=[{"role": "user", "content": "what is 6 * 7?"}])
        assert dumped(answer) == [{"type": "text", "text": "`6 * 7` = **42**"}]
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
        if process.stdout is not None:
            process.stdout.close()
