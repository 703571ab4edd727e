"""Regressions found by replaying recorded Anthropic traffic (issue 12), end to end.

Each test drives ``AnthropicModel`` through the official SDK against ``AnthropicSimulator``.
The ``RECORDED_*`` bodies below are response bodies in the Messages API wire format, as the
real API sent them (ids, signatures and summaries shortened); the simulator serves their
content and usage, streamed or as JSON, and enforces the API's rules on what comes back.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import pytest

from dive.agent import Agent
from dive.errors import InvalidRequestError
from dive.llm import (
    ContentBlockDelta,
    ContentBlockStart,
    ContentBlockStop,
    Model,
    ModelRequest,
    ModelSettings,
    TokenCounter,
    Usage,
    cost_of,
)
from dive.messages import Message, TextBlock, ToolDefinition, ToolResult, UnknownBlock
from dive.providers._retry import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.providers.anthropic._stream import StreamMapper
from dive.sessions import MemorySessionStore
from dive.testing.anthropic import AnthropicSimulator, SimReply, simulator, text

MODEL = "claude-sonnet-4-6"
ADAPTIVE_MODEL = "claude-opus-4-7"
FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
WHITESPACE_400 = "messages: text content blocks must contain non-whitespace text"
Json = dict[str, Any]

STREAMING = pytest.mark.parametrize("streaming", [True, False], ids=["stream", "json"])

# An adaptive-thinking turn: the model emitted a "\n\n" text block between its thinking and
# its tool call.
RECORDED_ADAPTIVE_TOOL_USE: Json = json.loads(
    """
{
  "id": "msg_01RecAdaptive000000000001",
  "type": "message",
  "role": "assistant",
  "model": "claude-opus-4-7",
  "content": [
    {"type": "thinking", "thinking": "The user wants a sum; call add.",
     "signature": "EqQBCkYIBxgCKkBrecordedsignature0001"},
    {"type": "text", "text": "\\n\\n"},
    {"type": "tool_use", "id": "toolu_01RecAdd000000000000001", "name": "add",
     "input": {"a": 1, "b": 2}}
  ],
  "stop_reason": "tool_use",
  "stop_sequence": null,
  "usage": {"input_tokens": 512, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0, "output_tokens": 61, "service_tier": "standard"}
}
"""
)

# pause_turn with web search: stray " " text blocks around the server tool pair.
RECORDED_PAUSE_TURN: Json = json.loads(
    """
{
  "id": "msg_01RecPause0000000000000001",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-6",
  "content": [
    {"type": "text", "text": " "},
    {"type": "server_tool_use", "id": "srvtoolu_01RecSearch00000001", "name": "web_search",
     "input": {"query": "weather in Paris today"}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01RecSearch00000001",
     "content": [{"type": "web_search_result", "title": "Paris weather",
                  "url": "https://weather.example/paris", "encrypted_content": "EqgfCioIARgB",
                  "page_age": null}]},
    {"type": "text", "text": " "}
  ],
  "stop_reason": "pause_turn",
  "stop_sequence": null,
  "usage": {"input_tokens": 2210, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0, "output_tokens": 95,
            "server_tool_use": {"web_search_requests": 1, "web_fetch_requests": 0},
            "service_tier": "standard"}
}
"""
)

# A server-side compaction: the summary block, then the answer. The compaction pass's own
# tokens are reported only in usage.iterations, not in the top-level fields.
RECORDED_COMPACTION: Json = json.loads(
    """
{
  "id": "msg_01RecCompact000000000000001",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-6",
  "content": [
    {"type": "compaction",
     "content": "Summary: the user is planning a trip to Paris; flights are booked for May 3.",
     "encrypted_content": "EpUCCkYIBhgCKkDcompactedstate0001"},
    {"type": "text", "text": "Your flights are booked for May 3."}
  ],
  "stop_reason": "end_turn",
  "stop_sequence": null,
  "usage": {
    "input_tokens": 1830,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 4096,
    "output_tokens": 12,
    "service_tier": "standard",
    "iterations": [
      {"type": "compaction", "input_tokens": 31204, "output_tokens": 1450,
       "cache_read_input_tokens": 24576, "cache_creation_input_tokens": 0},
      {"type": "message", "input_tokens": 1830, "output_tokens": 12,
       "cache_read_input_tokens": 4096, "cache_creation_input_tokens": 0}
    ]
  }
}
"""
)


def recorded(body: Json) -> SimReply:
    """The recorded response as a script item (its content, stop reason and usage)."""
    return SimReply(content=body["content"], stop_reason=body["stop_reason"], usage=body["usage"])


_OPEN: list[AnthropicModel] = []


@pytest.fixture
async def sim() -> AsyncIterator[AnthropicSimulator]:
    with simulator(assert_consumed=True) as s:
        try:
            yield s
        finally:
            while _OPEN:
                await _OPEN.pop().aclose()


def make_model(
    sim: AnthropicSimulator, *, name: str = MODEL, streaming: bool = True
) -> AnthropicModel:
    model = AnthropicModel(name, base_url=sim.url, api_key="test", retry=FAST, streaming=streaming)
    _OPEN.append(model)
    return model


def bodies(sim: AnthropicSimulator) -> list[Json]:
    return [r.body for r in sim.message_requests]


def strip_cc(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_cc(v) for k, v in value.items() if k != "cache_control"}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, list):
        return [strip_cc(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def sent_texts(body: Json) -> list[str]:
    out: list[str] = []
    for m in body["messages"]:
        content = m["content"]
        if isinstance(content, str):
            out.append(content)
            continue
        out += [b["text"] for b in content if b["type"] == "text"]
    return out


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


# --- 1. whitespace-only text blocks are kept, never sent ------------------------------------


def test_simulator_rejects_whitespace_only_text_like_the_api() -> None:
    messages: Any = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "\n\n"}]},
        {"role": "user", "content": "again"},
    ]
    with (
        simulator() as s,
        anthropic.Anthropic(base_url=s.url, api_key="test", max_retries=0) as client,
        pytest.raises(anthropic.BadRequestError) as caught,
    ):
        client.messages.create(model=MODEL, max_tokens=10, messages=messages)
    assert caught.value.status_code == 400
    assert caught.value.type == "invalid_request_error"
    assert caught.value.api_message == WHITESPACE_400


@STREAMING
async def test_whitespace_text_between_thinking_and_tool_use_is_not_sent(
    sim: AnthropicSimulator, streaming: bool
) -> None:
    sim.add(recorded(RECORDED_ADAPTIVE_TOOL_USE), text("It is 3."))
    agent = Agent(
        model=make_model(sim, name=ADAPTIVE_MODEL, streaming=streaming),
        tools=[add],
        model_settings=ModelSettings(thinking="adaptive"),
    )
    result = await agent.run("1 + 2?")

    assert result.status == "completed", result.outcome
    # Kept in the record, verbatim.
    stored = [b for m in result.turn.messages for b in m.content if isinstance(b, TextBlock)]
    assert any(b.text == "\n\n" for b in stored)
    # Dropped on the wire; the thinking block still leads the assistant message.
    second = bodies(sim)[1]
    assert [b["type"] for b in second["messages"][1]["content"]] == ["thinking", "tool_use"]
    assert all(t.strip() for t in sent_texts(second))


async def test_pause_turn_whitespace_blocks_are_not_resent(sim: AnthropicSimulator) -> None:
    sim.add(recorded(RECORDED_PAUSE_TURN), text("Sunny, 21 °C."))
    result = await Agent(model=make_model(sim)).run("weather in Paris?")

    assert result.status == "completed", result.outcome
    resend = strip_cc(bodies(sim)[1]["messages"])
    assert [b["type"] for b in resend[-1]["content"]] == [
        "server_tool_use",
        "web_search_tool_result",
    ]
    assert all(t.strip() for t in sent_texts(bodies(sim)[1]))


async def test_an_assistant_message_of_only_whitespace_is_dropped_and_the_session_goes_on(
    sim: AnthropicSimulator,
) -> None:
    sim.add(SimReply(content=[{"type": "text", "text": "\n\n"}]), text("Here I am."))
    session = MemorySessionStore().session("ws")
    agent = Agent(model=make_model(sim), session=session)
    first = await agent.run("hello")
    assert first.status == "completed"
    second = await agent.run("are you there?")

    assert second.status == "completed", second.outcome
    sent = bodies(sim)[1]["messages"]
    # No empty assistant message: the two user messages travel as one user message.
    assert [m["role"] for m in sent] == ["user"]
    assert sent_texts(bodies(sim)[1]) == ["hello", "are you there?"]
    # The record keeps the whitespace answer.
    assert [m.text for m in first.turn.messages if m.role == "assistant"] == ["\n\n"]


# --- 2. streamed compaction keeps its content --------------------------------------------------


@STREAMING
async def test_compaction_block_is_resent_byte_for_byte(
    sim: AnthropicSimulator, streaming: bool
) -> None:
    sim.add(recorded(RECORDED_COMPACTION), text("Anything else?"))
    session = MemorySessionStore().session("compact")
    agent = Agent(model=make_model(sim, streaming=streaming), session=session)
    first = await agent.run("when do I fly?")
    assert first.status == "completed", first.outcome
    blocks = [b for m in first.turn.messages for b in m.content if isinstance(b, UnknownBlock)]
    assert [b.block_type for b in blocks] == ["compaction"]
    assert blocks[0].data == RECORDED_COMPACTION["content"][0]

    await agent.run("thanks")
    assistant = strip_cc(bodies(sim)[1]["messages"][1])
    assert assistant["role"] == "assistant"
    expected = json.dumps(RECORDED_COMPACTION["content"][0], sort_keys=True)
    assert json.dumps(assistant["content"][0], sort_keys=True) == expected


def test_simulator_streams_compaction_as_a_compaction_delta() -> None:
    messages: Any = [{"role": "user", "content": "hi"}]
    with (
        simulator(assert_consumed=True) as s,
        anthropic.Anthropic(base_url=s.url, api_key="test", max_retries=0) as client,
    ):
        s.add(recorded(RECORDED_COMPACTION))
        stream = client.messages.create(model=MODEL, max_tokens=10, messages=messages, stream=True)
        events = [e.model_dump(mode="json", warnings=False) for e in stream]
    starts = [e for e in events if e["type"] == "content_block_start" and e["index"] == 0]
    deltas = [e for e in events if e["type"] == "content_block_delta" and e["index"] == 0]
    assert starts[0]["content_block"]["type"] == "compaction"
    assert starts[0]["content_block"].get("content") is None
    assert [d["delta"]["type"] for d in deltas] == ["compaction_delta"]
    assert deltas[0]["delta"]["content"] == RECORDED_COMPACTION["content"][0]["content"]
    usage = next(e for e in events if e["type"] == "message_delta")["usage"]
    assert usage["iterations"] == RECORDED_COMPACTION["usage"]["iterations"]


def test_unknown_deltas_of_an_unknown_block_are_accumulated_not_dropped() -> None:
    mapper = StreamMapper("anthropic")
    raw: list[Json] = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "future_block", "note": "", "parts": [], "level": 1},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "future_delta", "note": "ab"},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "future_delta", "note": "cd", "parts": [1], "level": 2},
        },
        {"type": "content_block_stop", "index": 0},
    ]
    events = [e for r in raw for e in mapper.map_all(r)]
    assert [type(e) for e in events] == [ContentBlockStart, ContentBlockStop]
    start = events[0]
    assert isinstance(start, ContentBlockStart)
    assert start.block == UnknownBlock(
        provider="anthropic",
        block_type="future_block",
        data={"type": "future_block", "note": "abcd", "parts": [1], "level": 2},
    )


def test_an_unknown_delta_of_a_known_block_is_reported(caplog: pytest.LogCaptureFixture) -> None:
    mapper = StreamMapper("anthropic")
    start: Json = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    assert [type(e) for e in mapper.map_all(start)] == [ContentBlockStart]
    with caplog.at_level(logging.WARNING, logger="dive.providers.anthropic"):
        out = mapper.map_all(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "mystery_delta"}}
        )
    assert out == []
    assert "mystery_delta" in caplog.text
    text_delta: Json = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "x"},
    }
    assert [type(e) for e in mapper.map_all(text_delta)] == [ContentBlockDelta]


# --- 3. compaction iterations and server tool use in usage -------------------------------------


@STREAMING
async def test_compaction_iterations_are_summed_into_usage(
    sim: AnthropicSimulator, streaming: bool
) -> None:
    sim.add(recorded(RECORDED_COMPACTION))
    result = await Agent(model=make_model(sim, streaming=streaming)).run("when do I fly?")

    u = result.usage
    assert u.input_tokens == 1830 + 31204
    assert u.cache_read_input_tokens == 4096 + 24576
    assert u.output_tokens == 12 + 1450
    assert u.requests == 1
    assert u.cost is not None
    assert u.cost == pytest.approx(cost_of(u, provider="anthropic", model=MODEL) or 0.0)


@STREAMING
async def test_web_search_requests_are_counted_and_costed(
    sim: AnthropicSimulator, streaming: bool
) -> None:
    sim.add(recorded(RECORDED_PAUSE_TURN), text("Sunny."))
    result = await Agent(model=make_model(sim, streaming=streaming)).run("weather?")

    assert result.status == "completed", result.outcome
    assert result.usage.web_search_requests == 1
    assert result.usage.web_fetch_requests == 0
    assert result.usage.requests == 2
    tokens = result.usage
    without_search = cost_of(
        Usage(
            input_tokens=tokens.input_tokens,
            output_tokens=tokens.output_tokens,
            cache_creation_input_tokens=tokens.cache_creation_input_tokens,
            cache_read_input_tokens=tokens.cache_read_input_tokens,
        ),
        provider="anthropic",
        model=MODEL,
    )
    assert without_search is not None
    assert tokens.cost is not None
    assert tokens.cost == pytest.approx(without_search + 10 / 1000)  # $10 per 1,000 searches


# --- 4. sampling warnings once per model --------------------------------------------------------


async def test_sampling_warning_is_logged_once_per_model(
    sim: AnthropicSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    settings = ModelSettings(thinking="enabled", reasoning_budget=2048, temperature=0.3)
    request = ModelRequest(messages=(Message.user("hi"),), settings=settings)
    sim.add("a", "b", "c")
    model = make_model(sim, streaming=False)
    with caplog.at_level(logging.WARNING, logger="dive.providers.anthropic"):
        await model.generate(request)
        await model.generate(request)
        assert caplog.text.count("temperature must be 1 with thinking") == 1
        await make_model(sim, streaming=False).generate(request)  # another model warns anew
    assert caplog.text.count("temperature must be 1 with thinking") == 2
    assert all("temperature" not in b for b in bodies(sim))


# --- 5. token counting -------------------------------------------------------------------------


async def test_count_tokens_through_the_sdk(sim: AnthropicSimulator) -> None:
    model = make_model(sim)
    assert isinstance(model, Model)
    assert isinstance(model, TokenCounter)
    request = ModelRequest(
        messages=(Message.user("What is 2 + 3? " * 20),),
        system="You add numbers.",
        tools=(ToolDefinition(name="add", description="Add two numbers."),),
        settings=ModelSettings(max_tokens=100, temperature=0.5, stop_sequences=("END",)),
    )
    counted = await model.count_tokens(request)

    client = anthropic.AsyncAnthropic(base_url=sim.url, api_key="test", max_retries=0)
    async with client:
        direct = await client.messages.count_tokens(
            model=MODEL,
            system="You add numbers.",
            tools=[
                {
                    "name": "add",
                    "description": "Add two numbers.",
                    "input_schema": {"type": "object", "properties": {}},
                }
            ],
            messages=[{"role": "user", "content": "What is 2 + 3? " * 20}],
        )
    assert counted == direct.input_tokens > 0
    recorded_request = sim.requests[0]
    assert recorded_request.path.startswith("/v1/messages/count_tokens")
    for absent in ("max_tokens", "stream", "temperature", "stop_sequences"):
        assert absent not in recorded_request.body
    assert sim.message_requests == []


async def test_count_tokens_reports_a_refusal_as_a_provider_error(sim: AnthropicSimulator) -> None:
    orphan = ToolResult(tool_call_id="toolu_01Orphan", content=(TextBlock(text="4"),))
    request = ModelRequest(messages=(Message.user("hi"), Message.tool(orphan)))
    with pytest.raises(InvalidRequestError, match="unexpected `tool_use_id`"):
        await make_model(sim).count_tokens(request)
