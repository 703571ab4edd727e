"""The OpenAI API simulator, driven through the official ``openai`` SDK."""

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

import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFailedEvent,
    ResponseIncompleteEvent,
    ResponseStreamEvent,
)

import dive.testing.openai as simpkg
from dive.testing.openai import (
    OpenAISimulator,
    SimClock,
    SimCut,
    SimFault,
    SimMalformed,
    SimReply,
    SimStreamError,
    SimTruncated,
    call,
    prompt_tokens,
    reasoning,
    simulator,
    text_tokens,
)

MODEL = "gpt-4.1"
REASONING_MODEL = "o4-mini"
HI: Any = [{"role": "user", "content": "hi"}]  # Any: SDK TypedDicts and plain dicts mix
WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
STRICT_WEATHER: Any = {
    "type": "function",
    "function": {**WEATHER["function"], "strict": True},
}
FLAT_WEATHER: Any = {"type": "function", **WEATHER["function"]}
ENCRYPTED: Any = ["reasoning.encrypted_content"]


@pytest.fixture
def sim() -> Iterator[OpenAISimulator]:
    with simulator(assert_consumed=True) as s:
        yield s


@pytest.fixture
def client(sim: OpenAISimulator) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=sim.url, api_key="test", max_retries=0) as c:
        yield c


@pytest.fixture
async def aclient(sim: OpenAISimulator) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url=sim.url, api_key="test", max_retries=0) as c:
        yield c


@contextmanager
def sim_client(**options: Any) -> Generator[tuple[OpenAISimulator, openai.OpenAI]]:
    """A simulator with a sync client (no retries)."""
    with (
        OpenAISimulator(**options) as s,
        openai.OpenAI(base_url=s.url, api_key="test", max_retries=0) as c,
    ):
        yield s, c


def chat(client: openai.OpenAI, **params: Any) -> ChatCompletion:
    params.setdefault("model", MODEL)
    params.setdefault("messages", HI)
    return cast(ChatCompletion, client.chat.completions.create(**params))


async def achat(client: openai.AsyncOpenAI, **params: Any) -> ChatCompletion:
    params.setdefault("model", MODEL)
    params.setdefault("messages", HI)
    return cast(ChatCompletion, await client.chat.completions.create(**params))


def chat_chunks(client: openai.OpenAI, **params: Any) -> list[ChatCompletionChunk]:
    params.setdefault("model", MODEL)
    params.setdefault("messages", HI)
    stream = client.chat.completions.create(stream=True, **params)
    with stream:
        return list(cast(Iterator[ChatCompletionChunk], stream))


def respond(client: openai.OpenAI, **params: Any) -> Response:
    params.setdefault("model", MODEL)
    params.setdefault("input", "hi")
    return cast(Response, client.responses.create(**params))


async def arespond(client: openai.AsyncOpenAI, **params: Any) -> Response:
    params.setdefault("model", MODEL)
    params.setdefault("input", "hi")
    return cast(Response, await client.responses.create(**params))


def response_events(client: openai.OpenAI, **params: Any) -> list[ResponseStreamEvent]:
    params.setdefault("model", MODEL)
    params.setdefault("input", "hi")
    stream = client.responses.create(stream=True, **params)
    with stream:
        return list(cast(Iterator[ResponseStreamEvent], stream))


async def collect(stream: Any, into: list[Any]) -> None:
    """Iterate an SDK async stream to its end (or its error), keeping what arrived."""
    async with stream:
        async for item in stream:
            into.append(item)


def error_of(exc: openai.APIError) -> dict[str, Any]:
    """The ``error`` object of an SDK exception (the SDK unwraps the envelope)."""
    body: object = exc.body
    assert isinstance(body, dict)
    return cast(dict[str, Any], body)


def raw_post(
    sim: OpenAISimulator,
    path: str,
    body: object,
    *,
    method: str = "POST",
    headers: dict[str, str] | None = None,
    data: bytes | None = None,
) -> tuple[int, dict[str, str], bytes]:
    """A request without the SDK, to see the exact bytes."""
    if headers is None:
        headers = {"authorization": "Bearer test", "content-type": "application/json"}
    if data is None and method == "POST":
        data = json.dumps(body).encode()
    request = urllib.request.Request(sim.origin + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            got = {k.lower(): v for k, v in response.headers.items()}
            return response.status, got, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def parse_chat_sse(raw: bytes) -> tuple[list[dict[str, Any]], bool]:
    """Split a data-only SSE body; returns the payloads and whether it ended with [DONE]."""
    text = raw.decode()
    assert text.endswith("\n\n")
    payloads: list[dict[str, Any]] = []
    done = False
    for chunk in text.split("\n\n")[:-1]:
        assert "\n" not in chunk, chunk  # one data line, no event line
        assert chunk.startswith("data: ")
        assert not done, "nothing may follow [DONE]"
        data = chunk[len("data: ") :]
        if data == "[DONE]":
            done = True
            continue
        payloads.append(json.loads(data))
    return payloads, done


def parse_responses_sse(raw: bytes) -> list[dict[str, Any]]:
    """Split an ``event:``-framed SSE body, checking the framing and sequence numbers."""
    text = raw.decode()
    assert text.endswith("\n\n")
    events: list[dict[str, Any]] = []
    for chunk in text.split("\n\n")[:-1]:
        lines = chunk.split("\n")
        assert len(lines) == 2, chunk
        assert lines[0].startswith("event: ")
        assert lines[1].startswith("data: ")
        assert lines[1] != "data: [DONE]"
        data = json.loads(lines[1][len("data: ") :])
        assert data["type"] == lines[0][len("event: ") :]
        assert data["sequence_number"] == len(events)
        events.append(data)
    return events


def rebuild_chat(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Check the B3 invariants while rebuilding the message from its chunks."""
    assert chunks
    first = chunks[0]
    content: str | None = None
    refusal: str | None = None
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: dict[str, Any] | None = None
    for i, chunk in enumerate(chunks):
        assert chunk["object"] == "chat.completion.chunk"
        for key in ("id", "created", "model"):
            assert chunk[key] == first[key]
        if not chunk["choices"]:
            assert i == len(chunks) - 1, "the usage chunk comes last"
            usage = chunk["usage"]
            continue
        assert finish is None, "the finish_reason chunk ends the choices"
        (choice,) = chunk["choices"]
        assert choice["index"] == 0
        delta = choice["delta"]
        if i == 0:
            assert delta["role"] == "assistant"
        else:
            assert "role" not in delta
        if delta.get("content") is not None:
            content = (content or "") + delta["content"]
        if delta.get("refusal") is not None:
            refusal = (refusal or "") + delta["refusal"]
        pieces: list[dict[str, Any]] = delta.get("tool_calls") or []
        for piece in pieces:
            index = piece["index"]
            if index not in calls:
                assert index == len(calls), "parallel calls use new indexes"
                assert piece["type"] == "function"
                assert piece["id"].startswith("call_")
                assert piece["function"]["arguments"] == ""
                calls[index] = {
                    "id": piece["id"],
                    "type": "function",
                    "function": {"name": piece["function"]["name"], "arguments": ""},
                }
            else:
                assert set(piece) == {"index", "function"}
                assert set(piece["function"]) == {"arguments"}
                calls[index]["function"]["arguments"] += piece["function"]["arguments"]
        if choice["finish_reason"] is not None:
            assert delta == {}
            finish = choice["finish_reason"]
    assert finish is not None
    message: dict[str, Any] = {"content": content, "refusal": refusal, "finish_reason": finish}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    if usage is not None:
        message["usage"] = usage
    return message


def event_types(events: list[ResponseStreamEvent] | list[dict[str, Any]]) -> list[str]:
    return [e["type"] if isinstance(e, dict) else e.type for e in events]


def dumped_output(response: Response) -> list[dict[str, Any]]:
    """The output items as the client would echo them back."""
    return [item.model_dump(exclude_none=True) for item in response.output]


# --- public surface ----------------------------------------------------------------------


def test_public_names() -> None:
    assert sorted(simpkg.__all__) == sorted(
        [
            "OpenAISimulator",
            "Reasoning",
            "Reply",
            "ScriptItem",
            "SimClock",
            "SimCut",
            "SimFault",
            "SimMalformed",
            "SimReply",
            "SimRequest",
            "SimStreamError",
            "SimTruncated",
            "ToolCall",
            "call",
            "is_reasoning_model",
            "prompt_tokens",
            "reasoning",
            "refusal",
            "reply",
            "simulator",
            "text",
            "text_tokens",
            "tool_call",
            "tool_calls",
        ]
    )
    assert simpkg.is_reasoning_model("o3-mini")
    assert simpkg.is_reasoning_model("gpt-5.1")
    assert not simpkg.is_reasoning_model("gpt-4.1")
    assert not simpkg.is_reasoning_model("omni-moderation")


def test_start_stop_and_url() -> None:
    sim = OpenAISimulator().start()
    try:
        assert sim.url.startswith("http://127.0.0.1:")
        assert sim.url.endswith("/v1")
        assert sim.url == sim.origin + "/v1"
        with pytest.raises(RuntimeError):
            sim.start()
    finally:
        sim.stop()
    sim.stop()  # idempotent


# --- Chat Completions: non-streaming -------------------------------------------------------


def test_chat_text_reply(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(sim.text("Hello there, how can I help?"))
    completion = chat(client)
    assert completion.id.startswith("chatcmpl-")
    assert completion.object == "chat.completion"
    assert completion.created > 0
    assert completion.model == MODEL
    (choice,) = completion.choices
    assert choice.index == 0
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert choice.message.content == "Hello there, how can I help?"
    assert choice.message.refusal is None
    assert choice.message.tool_calls is None
    usage = completion.usage
    assert usage is not None
    assert usage.prompt_tokens == prompt_tokens({"messages": HI})
    assert usage.completion_tokens == text_tokens("Hello there, how can I help?")
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 0
    assert usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == 0
    (recorded,) = sim.requests
    assert recorded.path == "/v1/chat/completions"
    assert recorded["messages"] == HI
    assert recorded.headers["authorization"] == "Bearer test"
    assert sim.chat_requests == [recorded]
    assert sim.responses_requests == []


async def test_chat_parallel_tool_calls_async(
    sim: OpenAISimulator, aclient: openai.AsyncOpenAI
) -> None:
    sim.add(
        sim.tool_calls(
            call("get_weather", {"city": "Paris"}, call_id="call_A"),
            call("get_weather", {"city": "Tokyo", "nested": {"a": [1, 2]}}),
            text="Checking both.",
        ),
        sim.tool_call("lookup", '{"q": "raw string, kept verbatim"'),
    )
    completion = await achat(aclient, tools=[WEATHER], parallel_tool_calls=True)
    (choice,) = completion.choices
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Checking both."
    calls = [c.model_dump() for c in choice.message.tool_calls or []]
    assert calls[0] == {
        "id": "call_A",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    assert calls[1]["id"].startswith("call_")
    assert json.loads(calls[1]["function"]["arguments"]) == {
        "city": "Tokyo",
        "nested": {"a": [1, 2]},
    }
    second = await achat(aclient)
    (raw_call,) = second.choices[0].message.tool_calls or []
    assert raw_call.model_dump()["function"]["arguments"] == '{"q": "raw string, kept verbatim"'
    assert second.choices[0].message.content is None


def test_chat_refusal(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(sim.refusal("I can't help with that."))
    message = chat(client).choices[0].message
    assert message.refusal == "I can't help with that."
    assert message.content is None


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (SimReply(text="done"), "stop"),
        (SimReply(text="trunc", finish_reason="length"), "length"),
        (SimReply(text="trunc", incomplete_reason="max_output_tokens"), "length"),
        (SimReply(tool_calls=[call("f")]), "tool_calls"),
        (SimReply(text="", finish_reason="content_filter"), "content_filter"),
        (SimReply(text="x", incomplete_reason="content_filter"), "content_filter"),
        (SimReply(tool_calls=[call("f")], finish_reason="stop"), "stop"),
    ],
)
def test_chat_finish_reasons(
    sim: OpenAISimulator, client: openai.OpenAI, reply: SimReply, expected: str
) -> None:
    sim.add(reply, reply)
    assert chat(client).choices[0].finish_reason == expected
    chunks = chat_chunks(client)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == expected
    assert all(f is None for f in finishes[:-1])


def test_chat_usage_overrides_and_reasoning(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(
        SimReply(text="answer", cached_tokens=1280, reasoning_tokens=300),
        SimReply(text="answer", reasoning=[reasoning("a" * 40, "b" * 40)]),
        SimReply(text="x", input_tokens=5000, output_tokens=9, usage={"service": "extra"}),
    )
    usage = chat(client, model=REASONING_MODEL).usage
    assert usage is not None
    assert usage.prompt_tokens_details is not None
    assert usage.completion_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 1280
    assert usage.prompt_tokens >= 1280  # prompt tokens include cached ones
    assert usage.completion_tokens_details.reasoning_tokens == 300
    assert usage.completion_tokens == 300 + text_tokens("answer")  # includes reasoning
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    second = chat(client, model=REASONING_MODEL).usage
    assert second is not None
    assert second.completion_tokens_details is not None
    assert second.completion_tokens_details.reasoning_tokens == 20
    assert second.completion_tokens == 20 + text_tokens("answer")
    third = chat(client).usage
    assert third is not None
    assert (third.prompt_tokens, third.completion_tokens, third.total_tokens) == (5000, 9, 5009)
    assert third.model_dump()["service"] == "extra"


def test_callable_reply_sees_request(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    seen: list[dict[str, Any]] = []

    def answer(request: dict[str, Any]) -> str:
        seen.append(request)
        if "messages" in request:
            return f"chat: {request['messages'][-1]['content']}"
        return f"responses: {request['input']}"

    sim.add(answer, answer)
    said = chat(client, messages=[{"role": "user", "content": "ping"}])
    assert said.choices[0].message.content == "chat: ping"
    assert respond(client, input="pong").output_text == "responses: pong"
    assert seen[0]["model"] == MODEL
    assert [r.path for r in sim.requests] == ["/v1/chat/completions", "/v1/responses"]


def test_callable_errors_answer_500(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    def broken(request: dict[str, Any]) -> str:
        raise KeyError("oops")

    def garbage(request: dict[str, Any]) -> Any:
        return 42

    sim.add(broken, garbage)
    with pytest.raises(openai.InternalServerError) as caught:
        chat(client)
    assert "KeyError" in error_of(caught.value)["message"]
    with pytest.raises(openai.InternalServerError, match="reply or a fault"):
        respond(client)
    assert isinstance(sim.errors[0], KeyError)
    assert isinstance(sim.errors[1], TypeError)


def test_exhausted_script(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    with pytest.raises(openai.InternalServerError) as caught:
        chat(client)
    assert caught.value.status_code == 500
    assert "script is exhausted" in error_of(caught.value)["message"]
    assert caught.value.response.headers["x-should-retry"] == "false"


def test_assert_consumed() -> None:
    with (
        pytest.raises(AssertionError, match="1 scripted replies"),
        simulator(assert_consumed=True) as s,
    ):
        s.add("never requested")


def test_fallback_reply() -> None:
    with sim_client(fallback="always this") as (_, c):
        assert chat(c).choices[0].message.content == "always this"
        assert respond(c).output_text == "always this"


# --- Chat Completions: streaming -----------------------------------------------------------


def test_chat_raw_stream_framing(sim: OpenAISimulator) -> None:
    long_text = "The quick brown fox jumps over the lazy dog. " * 3
    sim.add(
        sim.tool_calls(
            call("get_weather", {"city": "Paris, France", "unit": "celsius"}),
            call("get_time", {}),
            text=long_text,
        ),
        sim.tool_calls(call("get_weather", {"city": "Oslo"})),
    )
    body: dict[str, Any] = {
        "model": MODEL,
        "messages": HI,
        "tools": [WEATHER],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    status, headers, raw = raw_post(sim, "/v1/chat/completions", body)
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["x-request-id"].startswith("req_")
    chunks, done = parse_chat_sse(raw)
    assert done
    assert chunks[0]["choices"][0]["delta"] == {
        "role": "assistant",
        "content": "",
        "refusal": None,
    }
    assert all(c["usage"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"] == []
    message = rebuild_chat(chunks)
    assert message["content"] == long_text
    assert message["finish_reason"] == "tool_calls"
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather", "get_time"]
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {
        "city": "Paris, France",
        "unit": "celsius",
    }
    assert message["tool_calls"][1]["function"]["arguments"] == "{}"
    usage = message["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert usage["completion_tokens_details"]["reasoning_tokens"] == 0
    assert "obfuscation" in chunks[0]

    # A reply of calls only: the first delta carries the first call's header (B3's example).
    body["stream_options"] = {"include_obfuscation": False}
    _, _, raw = raw_post(sim, "/v1/chat/completions", body)
    chunks, done = parse_chat_sse(raw)
    assert done
    first = chunks[0]["choices"][0]["delta"]
    assert first["role"] == "assistant"
    assert first["content"] is None
    assert first["refusal"] is None
    assert first["tool_calls"][0]["index"] == 0
    assert first["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": ""}
    assert all("usage" not in c and "obfuscation" not in c for c in chunks)
    assert json.loads(rebuild_chat(chunks)["tool_calls"][0]["function"]["arguments"]) == {
        "city": "Oslo"
    }


async def test_chat_stream_iteration_matches_non_stream(
    sim: OpenAISimulator, aclient: openai.AsyncOpenAI
) -> None:
    scripted = sim.tool_calls(
        call("get_weather", {"city": "Paris"}, call_id="call_1"),
        call("get_weather", {"city": "Rome"}, call_id="call_2"),
        text="Let me look.",
    )
    sim.add(scripted, scripted)
    plain = await achat(aclient, tools=[WEATHER])
    stream = await aclient.chat.completions.create(
        model=MODEL,
        messages=HI,
        tools=[WEATHER],
        stream=True,
        stream_options={"include_usage": True},
    )
    text = ""
    arguments: dict[int, str] = {}
    ids: dict[int, str] = {}
    finish: str | None = None
    usage: Any = None
    async with stream:
        async for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                text += choice.delta.content or ""
                for piece in choice.delta.tool_calls or []:
                    if piece.id is not None:
                        ids[piece.index] = piece.id
                    if piece.function is not None and piece.function.arguments:
                        arguments[piece.index] = (
                            arguments.get(piece.index, "") + piece.function.arguments
                        )
                finish = choice.finish_reason or finish
    message = plain.choices[0].message
    assert text == message.content
    assert finish == plain.choices[0].finish_reason == "tool_calls"
    assert ids == {0: "call_1", 1: "call_2"}
    plain_calls = [c.model_dump() for c in message.tool_calls or []]
    assert [arguments[0], arguments[1]] == [c["function"]["arguments"] for c in plain_calls]
    assert usage == plain.usage


def test_chat_stream_helper(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(sim.tool_calls(call("get_weather", {"city": "Paris"}), text="Looking it up."))
    deltas: list[str] = []
    with client.chat.completions.stream(
        model=MODEL,
        messages=HI,
        tools=[STRICT_WEATHER],
        stream_options={"include_usage": True},
    ) as stream:
        for event in stream:
            if event.type == "content.delta":
                deltas.append(event.delta)
        final = stream.get_final_completion()
    assert "".join(deltas) == "Looking it up."
    message = final.choices[0].message
    assert message.content == "Looking it up."
    (tool_call,) = message.tool_calls or []
    assert tool_call.model_dump()["function"]["parsed_arguments"] == {"city": "Paris"}
    assert final.choices[0].finish_reason == "tool_calls"
    assert final.usage is not None
    assert final.usage.completion_tokens > 0


def test_chat_stream_refusal(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(sim.refusal("No, sorry, I won't."))
    chunks = chat_chunks(client)
    first = chunks[0].choices[0].delta
    assert (first.role, first.content, first.refusal) == ("assistant", None, "")
    refusal = "".join(c.choices[0].delta.refusal or "" for c in chunks if c.choices)
    assert refusal == "No, sorry, I won't."
    assert all(c.usage is None for c in chunks)


def test_reply_delays(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(SimReply(text="slow", delay=0.05, event_delay=0.01))
    started = time.monotonic()
    chunks = chat_chunks(client)
    assert len(chunks) == 3  # role, text, finish
    assert time.monotonic() - started >= 0.05 + 0.01 * 4


# --- Responses: non-streaming --------------------------------------------------------------


def test_responses_text_and_echoed_settings(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add("Hello.")
    response = respond(
        client,
        instructions="Be brief.",
        temperature=0.5,
        top_p=0.9,
        max_output_tokens=500,
        metadata={"run": "1"},
        tools=[FLAT_WEATHER],
        tool_choice="auto",
        parallel_tool_calls=False,
        truncation="auto",
        store=False,
        text={"format": {"type": "text"}},
        prompt_cache_key="session-1",
    )
    assert response.id.startswith("resp_")
    assert response.object == "response"
    assert response.status == "completed"
    assert response.error is None
    assert response.incomplete_details is None
    assert response.completed_at is not None
    assert response.output_text == "Hello."
    (item,) = response.output
    assert item.type == "message"
    assert item.id.startswith("msg_")
    assert item.status == "completed"
    assert item.role == "assistant"
    assert [p.model_dump(exclude_none=True) for p in item.content] == [
        {"type": "output_text", "text": "Hello.", "annotations": [], "logprobs": []}
    ]
    assert response.instructions == "Be brief."
    assert (response.temperature, response.top_p) == (0.5, 0.9)
    assert response.max_output_tokens == 500
    assert response.metadata == {"run": "1"}
    assert [t.model_dump(exclude_none=True)["name"] for t in response.tools] == ["get_weather"]
    assert response.tool_choice == "auto"
    assert response.parallel_tool_calls is False
    assert response.truncation == "auto"
    assert response.model_dump()["store"] is False
    assert response.prompt_cache_key == "session-1"
    assert response.text is not None
    assert response.text.format is not None
    assert response.text.format.type == "text"
    usage = response.usage
    assert usage is not None
    assert usage.input_tokens == prompt_tokens(sim.requests[0].body)
    assert usage.output_tokens == text_tokens("Hello.")
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.input_tokens_details.cached_tokens == 0
    assert usage.output_tokens_details.reasoning_tokens == 0


async def test_responses_parallel_function_calls(
    sim: OpenAISimulator, aclient: openai.AsyncOpenAI
) -> None:
    sim.add(
        sim.tool_calls(
            call("get_weather", {"city": "Paris"}, call_id="call_P"),
            call("get_weather", {"city": "Lima"}),
        )
    )
    response = await arespond(aclient, tools=[FLAT_WEATHER])
    assert response.status == "completed"
    first, second = dumped_output(response)
    assert first == {
        "id": first["id"],
        "type": "function_call",
        "status": "completed",
        "call_id": "call_P",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    }
    assert first["id"].startswith("fc_")
    assert second["call_id"].startswith("call_")
    assert second["id"] != first["id"]
    assert json.loads(second["arguments"]) == {"city": "Lima"}
    assert response.output_text == ""


def test_responses_reasoning_round_trip(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(
        SimReply(
            reasoning=[reasoning("I should check the weather.", content=["raw thought"])],
            tool_calls=[call("get_weather", {"city": "Paris"})],
        ),
        "It is sunny.",
        SimReply(reasoning=[reasoning()], text="no include"),
    )
    first = respond(
        client, model=REASONING_MODEL, tools=[FLAT_WEATHER], include=ENCRYPTED, store=False
    )
    items = dumped_output(first)
    rs, fc = items
    assert rs["type"] == "reasoning"
    assert rs["id"].startswith("rs_")
    assert rs["summary"] == [{"type": "summary_text", "text": "I should check the weather."}]
    assert rs["content"] == [{"type": "reasoning_text", "text": "raw thought"}]
    assert rs["encrypted_content"].startswith("gAAAAA")
    assert sim.issued_reasoning(rs["encrypted_content"]) == rs["id"]
    usage = first.usage
    assert usage is not None
    reasoning_tokens = text_tokens("I should check the weather.") + text_tokens("raw thought")
    assert usage.output_tokens_details.reasoning_tokens == reasoning_tokens
    visible = text_tokens("get_weather") + text_tokens('{"city": "Paris"}')
    assert usage.output_tokens == reasoning_tokens + visible

    follow_up: Any = [
        {"role": "user", "content": "hi"},
        *items,
        {"type": "function_call_output", "call_id": fc["call_id"], "output": "sunny"},
    ]
    second = respond(
        client,
        model=REASONING_MODEL,
        input=follow_up,
        tools=[FLAT_WEATHER],
        include=ENCRYPTED,
        store=False,
    )
    assert second.output_text == "It is sunny."
    assert sim.requests[1]["input"][1]["encrypted_content"] == rs["encrypted_content"]

    tampered = json.loads(json.dumps(follow_up))
    tampered[1]["encrypted_content"] = rs["encrypted_content"][:-4] + "AAAA"
    with pytest.raises(openai.BadRequestError) as caught:
        respond(client, model=REASONING_MODEL, input=tampered, tools=[FLAT_WEATHER], store=False)
    assert error_of(caught.value) == {
        "message": f"The encrypted content for item {rs['id']} could not be verified.",
        "type": "invalid_request_error",
        "param": "input",
        "code": "invalid_encrypted_content",
    }
    moved = json.loads(json.dumps(follow_up))
    moved[1]["id"] = "rs_other"
    with pytest.raises(openai.BadRequestError, match="could not be verified"):
        respond(client, model=REASONING_MODEL, input=moved, tools=[FLAT_WEATHER], store=False)

    stripped = json.loads(json.dumps(follow_up))
    del stripped[1]["encrypted_content"]
    with pytest.raises(openai.BadRequestError) as not_stored:
        respond(client, model=REASONING_MODEL, input=stripped, tools=[FLAT_WEATHER], store=False)
    assert error_of(not_stored.value)["message"] == (
        f"Item with id '{rs['id']}' not found. Items are not persisted when `store` is set to "
        "false. Try again with `store` set to true, or remove this item from your input."
    )

    # Without the include the item has no encrypted content.
    third = respond(client, model=REASONING_MODEL)
    assert third.output[0].type == "reasoning"
    assert third.output[0].encrypted_content is None


def test_stored_responses_chain(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(
        SimReply(reasoning=[reasoning("think")], tool_calls=[call("get_weather", {"city": "Rio"})]),
        "Warm.",
        "Referenced.",
    )
    first = respond(client, model=REASONING_MODEL, tools=[FLAT_WEATHER])
    fc = dumped_output(first)[1]
    with pytest.raises(openai.BadRequestError) as caught:
        respond(client, previous_response_id=first.id, input="and tomorrow?")
    assert error_of(caught.value)["message"] == (
        f"No tool output found for function call {fc['call_id']}."
    )
    output: Any = [{"type": "function_call_output", "call_id": fc["call_id"], "output": "28C"}]
    second = respond(client, previous_response_id=first.id, input=output)
    assert second.previous_response_id == first.id
    assert second.output_text == "Warm."
    # The stored reasoning item is accepted without encrypted content, and by reference.
    replay: Any = [
        {"role": "user", "content": "hi"},
        {"type": "item_reference", "id": first.output[0].id},
        {"type": "reasoning", "id": first.output[0].id, "summary": []},
        fc,
        *output,
    ]
    assert respond(client, input=replay).output_text == "Referenced."
    with pytest.raises(openai.BadRequestError) as missing:
        respond(client, previous_response_id="resp_nope")
    assert error_of(missing.value) == {
        "message": "Previous response with id 'resp_nope' not found.",
        "type": "invalid_request_error",
        "param": "previous_response_id",
        "code": "previous_response_not_found",
    }
    with pytest.raises(openai.BadRequestError, match=r"Item with id 'msg_x' not found\."):
        respond(client, input=[{"type": "item_reference", "id": "msg_x"}])


@pytest.mark.parametrize(
    ("reply", "status", "reason"),
    [
        (SimReply(text="ok"), "completed", None),
        (
            SimReply(text="cut", incomplete_reason="max_output_tokens"),
            "incomplete",
            "max_output_tokens",
        ),
        (SimReply(text="cut", finish_reason="length"), "incomplete", "max_output_tokens"),
        (SimReply(text="", incomplete_reason="content_filter"), "incomplete", "content_filter"),
        (SimReply(text="x", finish_reason="content_filter"), "incomplete", "content_filter"),
        (SimReply(tool_calls=[call("f")], status="incomplete"), "incomplete", "max_output_tokens"),
        (SimReply(error_code="server_error"), "failed", None),
        (SimReply(text="half", status="failed"), "failed", None),
    ],
)
def test_responses_status_mapping(
    sim: OpenAISimulator,
    client: openai.OpenAI,
    reply: SimReply,
    status: str,
    reason: str | None,
) -> None:
    sim.add(reply, reply)
    for response in (respond(client), _streamed_response(client)):
        assert response.status == status
        if reason is None:
            assert response.incomplete_details is None
        else:
            assert response.incomplete_details is not None
            assert response.incomplete_details.reason == reason
            assert response.output[-1].model_dump()["status"] == "incomplete"
        if status == "failed":
            assert response.error is not None
            assert response.error.code == "server_error"
            assert response.error.message
        else:
            assert response.error is None


def _streamed_response(client: openai.OpenAI) -> Response:
    """The response carried by a stream's terminal event."""
    events = response_events(client)
    terminal = events[-1]
    assert isinstance(
        terminal, ResponseCompletedEvent | ResponseIncompleteEvent | ResponseFailedEvent
    )
    return terminal.response


def test_failed_reply_on_chat_is_an_http_error(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(
        SimReply(error_code="rate_limit_exceeded", error_message="slow down"),
        SimReply(error_code="server_error"),
    )
    with pytest.raises(openai.RateLimitError) as caught:
        chat(client)
    assert error_of(caught.value)["message"] == "slow down"
    assert error_of(caught.value)["code"] == "rate_limit_exceeded"
    with pytest.raises(openai.InternalServerError):
        chat(client)


def test_responses_usage_overrides(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(SimReply(text="a", cached_tokens=1152, reasoning_tokens=64))
    usage = respond(client, model=REASONING_MODEL).usage
    assert usage is not None
    assert usage.input_tokens_details.cached_tokens == 1152
    assert usage.input_tokens == 1152  # raised to include the cached tokens
    assert usage.output_tokens_details.reasoning_tokens == 64
    assert usage.output_tokens == 64 + text_tokens("a")
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens


# --- Responses: streaming ------------------------------------------------------------------


def test_responses_raw_stream_framing(sim: OpenAISimulator) -> None:
    sim.add(
        SimReply(
            reasoning=[reasoning("First part of my thinking.", "Second part.")],
            text="Here is the answer, streamed in several pieces.",
            tool_calls=[call("get_weather", {"city": "Paris, France"}, call_id="call_S")],
        )
    )
    body: dict[str, Any] = {
        "model": REASONING_MODEL,
        "input": "hi",
        "stream": True,
        "include": ENCRYPTED,
        "store": False,
        "tools": [FLAT_WEATHER],
    }
    status, headers, raw = raw_post(sim, "/v1/responses", body)
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["x-request-id"].startswith("req_")
    events = parse_responses_sse(raw)
    types = event_types(events)
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    created = events[0]["response"]
    assert (created["status"], created["output"], created["usage"]) == ("in_progress", [], None)

    # Reasoning item: summary parts with deltas, reasoning text, then the done item.
    assert types[2:13] == [
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
    ]
    rs_done = events[12]["item"]
    assert rs_done["encrypted_content"].startswith("gAAAAA")
    assert "encrypted_content" not in events[2]["item"]
    summary = "".join(
        e["delta"] for e in events if e["type"] == "response.reasoning_summary_text.delta"
    )
    assert summary == "First part of my thinking.Second part."

    # Message: added → content_part.added → output_text.delta* → .done → part done → item done.
    message_types = [t for t in types[13:] if "function_call" not in t]
    assert message_types[:3] == [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]
    text_done = types.index("response.output_text.done")
    assert types[text_done + 1 : text_done + 3] == [
        "response.content_part.done",
        "response.output_item.done",
    ]
    added_message = events[13]["item"]
    assert (added_message["status"], added_message["content"]) == ("in_progress", [])
    assert events[14]["part"] == {
        "type": "output_text",
        "text": "",
        "annotations": [],
        "logprobs": [],
    }
    deltas = [e for e in events if e["type"] == "response.output_text.delta"]
    assert all(set(d) >= {"item_id", "output_index", "content_index", "delta"} for d in deltas)
    assert "".join(d["delta"] for d in deltas) == events[text_done]["text"]
    assert events[text_done]["text"] == "Here is the answer, streamed in several pieces."

    # Function call: arguments deltas concatenate to the arguments; call_id kept.
    fc_added = next(
        e
        for e in events
        if e["type"] == "response.output_item.added" and e["item"]["type"] == "function_call"
    )
    assert fc_added["item"]["arguments"] == ""
    assert fc_added["item"]["call_id"] == "call_S"
    fc_done = next(
        e
        for e in events
        if e["type"] == "response.output_item.done" and e["item"]["type"] == "function_call"
    )
    assert fc_done["item"]["call_id"] == "call_S"
    assert fc_done["item"]["status"] == "completed"
    pieces = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert all(p["item_id"] == fc_added["item"]["id"] for p in pieces)
    arguments = "".join(p["delta"] for p in pieces)
    assert json.loads(arguments) == {"city": "Paris, France"}
    args_done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    assert (args_done["name"], args_done["arguments"]) == ("get_weather", arguments)
    assert [e["output_index"] for e in events if e["type"] == "response.output_item.added"] == [
        0,
        1,
        2,
    ]

    final = events[-1]["response"]
    assert [i["type"] for i in final["output"]] == ["reasoning", "message", "function_call"]
    assert final["output"][0] == rs_done
    assert final["usage"]["total_tokens"] == (
        final["usage"]["input_tokens"] + final["usage"]["output_tokens"]
    )


def test_responses_stream_helper(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(
        SimReply(
            reasoning=[reasoning("hmm")],
            text="Calling the tool now.",
            tool_calls=[call("get_weather", {"city": "Paris"})],
        )
    )
    text: list[str] = []
    with client.responses.stream(
        model=REASONING_MODEL, input="hi", tools=[FLAT_WEATHER], include=ENCRYPTED, store=False
    ) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                text.append(event.delta)
        final = stream.get_final_response()
    assert "".join(text) == "Calling the tool now." == final.output_text
    assert [item.type for item in final.output] == ["reasoning", "message", "function_call"]
    assert final.usage is not None
    assert final.usage.output_tokens_details.reasoning_tokens == text_tokens("hmm")


async def test_responses_stream_iteration_and_round_trip(
    sim: OpenAISimulator, aclient: openai.AsyncOpenAI
) -> None:
    sim.add(
        SimReply(
            reasoning=[reasoning("plan")],
            tool_calls=[call("get_weather", {"city": "A"}), call("get_weather", {"city": "B"})],
        ),
        "Both sunny.",
    )
    stream = await aclient.responses.create(
        model=REASONING_MODEL,
        input="hi",
        tools=[FLAT_WEATHER],
        include=ENCRYPTED,
        store=False,
        stream=True,
    )
    done_items: list[dict[str, Any]] = []
    sequence: list[int] = []
    async with stream:
        async for event in stream:
            sequence.append(event.sequence_number)
            if event.type == "response.output_item.done":
                done_items.append(event.item.model_dump(exclude_none=True))
    assert sequence == list(range(len(sequence)))
    assert [i["type"] for i in done_items] == ["reasoning", "function_call", "function_call"]
    outputs = [
        {"type": "function_call_output", "call_id": i["call_id"], "output": "sun"}
        for i in done_items[1:]
    ]
    follow_up: Any = [{"role": "user", "content": "hi"}, *done_items, *outputs]
    answer = await arespond(
        aclient, model=REASONING_MODEL, input=follow_up, tools=[FLAT_WEATHER], store=False
    )
    assert answer.output_text == "Both sunny."


def test_responses_stream_refusal_and_no_obfuscation(
    sim: OpenAISimulator, client: openai.OpenAI
) -> None:
    sim.add(sim.refusal("I must decline."))
    events = response_events(client, stream_options={"include_obfuscation": False})
    types = event_types(events)
    assert "response.refusal.delta" in types
    done = next(e for e in events if e.type == "response.refusal.done")
    assert done.model_dump()["refusal"] == "I must decline."
    assert all("obfuscation" not in e.model_dump(exclude_none=True) for e in events)
    final = events[-1]
    assert final.type == "response.completed"
    content = final.response.output[0].model_dump()["content"]
    assert content == [{"type": "refusal", "refusal": "I must decline."}]


# --- validation: Chat Completions ----------------------------------------------------------


def _assistant_calls(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
            for i in ids
        ],
    }


def _tool(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


CHAT_ERRORS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (
        {
            "messages": [
                {"role": "user", "content": "hi"},
                _assistant_calls("call_A", "call_B"),
                _tool("call_A"),
                {"role": "user", "content": "well?"},
            ],
            "tools": [WEATHER],
        },
        {
            "message": "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            "response messages: call_B",
            "param": "messages.[3].role",
            "code": None,
        },
    ),
    (
        {"messages": [{"role": "user", "content": "hi"}, _assistant_calls("call_A", "call_B")]},
        {
            "message": "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            "response messages: call_A, call_B",
            "param": "messages.[1].role",
            "code": None,
        },
    ),
    (
        {"messages": [{"role": "user", "content": "hi"}, _tool("call_Z")]},
        {
            "message": "Invalid parameter: messages with role 'tool' must be a response to a "
            "preceeding message with 'tool_calls'.",
            "param": "messages.[1].role",
            "code": None,
        },
    ),
    (
        {
            "messages": [
                {"role": "user", "content": "hi"},
                _assistant_calls("call_A"),
                _tool("call_A"),
                {"role": "user", "content": "more"},
                _tool("call_A"),
            ]
        },
        {
            "message": "Invalid parameter: messages with role 'tool' must be a response to a "
            "preceeding message with 'tool_calls'.",
            "param": "messages.[4].role",
            "code": None,
        },
    ),
    (
        {
            "messages": [
                {"role": "user", "content": "hi"},
                _assistant_calls("call_A"),
                _tool("call_Q"),
            ]
        },
        {
            "message": "Invalid parameter: 'tool_call_id' of 'call_Q' not found in 'tool_calls' "
            "of previous message.",
            "param": "messages.[2].tool_call_id",
            "code": None,
        },
    ),
    (
        {"stream_options": {"include_usage": True}},
        {
            "message": "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "param": "stream_options",
            "code": None,
        },
    ),
    (
        {"parallel_tool_calls": False},
        {
            "message": "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only "
            "allowed when 'tools' are specified.",
            "param": "parallel_tool_calls",
            "code": None,
        },
    ),
    (
        {"model": "o3-mini", "max_tokens": 100},
        {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            "param": "max_tokens",
            "code": "unsupported_parameter",
        },
    ),
    (
        {"model": "gpt-5-mini", "max_tokens": 100},
        {
            "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            "param": "max_tokens",
            "code": "unsupported_parameter",
        },
    ),
    (
        {"messages": []},
        {
            "message": "Invalid 'messages': empty array. Expected an array with minimum length "
            "1, but got an empty array instead.",
            "param": "messages",
            "code": "empty_array",
        },
    ),
    (
        {"messages": [{"role": "bot", "content": "hi"}]},
        {
            "message": "Invalid value: 'bot'. Supported values are: 'system', 'assistant', "
            "'user', 'function', 'tool', and 'developer'.",
            "param": "messages[0].role",
            "code": "invalid_value",
        },
    ),
    (
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "call_A",
                            "type": "function",
                            "function": {"name": "f", "arguments": {"city": "Paris"}},
                        }
                    ],
                },
                _tool("call_A"),
            ]
        },
        {
            "message": "Invalid type for 'messages[1].tool_calls[0].function.arguments': "
            "expected a string, but got an object instead.",
            "param": "messages[1].tool_calls[0].function.arguments",
            "code": "invalid_type",
        },
    ),
    (
        {"tools": []},
        {
            "message": "Invalid 'tools': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead.",
            "param": "tools",
            "code": "empty_array",
        },
    ),
]


@pytest.mark.parametrize(("params", "expected"), CHAT_ERRORS)
def test_chat_validation_errors(
    sim: OpenAISimulator,
    client: openai.OpenAI,
    params: dict[str, Any],
    expected: dict[str, Any],
) -> None:
    sim.add("never used")
    with pytest.raises(openai.BadRequestError) as caught:
        chat(client, **params)
    assert error_of(caught.value) == {**expected, "type": "invalid_request_error"}
    assert expected["message"] in str(caught.value)
    assert caught.value.code == expected["code"]
    assert sim.pending == 1  # a rejected request consumes nothing
    assert chat(client).choices[0].message.content == "never used"


def test_chat_valid_tool_loop_and_reasoning_limits(
    sim: OpenAISimulator, client: openai.OpenAI
) -> None:
    sim.add("a", "b", "c")
    messages: Any = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        _assistant_calls("call_A", "call_B"),
        _tool("call_B"),
        _tool("call_A"),
        {"role": "user", "content": "thanks"},
    ]
    assert chat(client, messages=messages, tools=[WEATHER]).choices[0].message.content == "a"
    assert chat(client, model="o3", max_completion_tokens=100).choices[0].message.content == "b"
    assert chat(client, max_tokens=100).choices[0].message.content == "c"


def test_reasoning_model_predicate_is_configurable() -> None:
    def house_model(model: str) -> bool:
        return model == "house-model"

    with sim_client(reasoning_model=house_model, fallback="ok") as (_, c):
        assert chat(c, model="o3", max_tokens=10).choices[0].message.content == "ok"
        with pytest.raises(openai.BadRequestError, match="max_completion_tokens"):
            chat(c, model="house-model", max_tokens=10)


# --- validation: Responses -----------------------------------------------------------------


def _fc(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "get_weather", "arguments": "{}"}


def _fco(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


RESPONSES_ERRORS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (
        {"input": [{"role": "user", "content": "hi"}, _fco("call_uelfkqtHfJDC4Btqeoozq82e")]},
        {
            "message": "No tool call found for function call output with call_id "
            "call_uelfkqtHfJDC4Btqeoozq82e.",
            "param": "input",
            "code": None,
        },
    ),
    (
        {
            "input": [
                {"role": "user", "content": "hi"},
                _fc("call_1"),
                _fco("call_1"),
                _fc("call_2"),
            ]
        },
        {
            "message": "No tool output found for function call call_2.",
            "param": "input",
            "code": None,
        },
    ),
    (
        {"max_output_tokens": 8},
        {
            "message": "Invalid 'max_output_tokens': integer below minimum value. Expected a "
            "value >= 16, but got 8 instead.",
            "param": "max_output_tokens",
            "code": "integer_below_min_value",
        },
    ),
    (
        {"tools": [WEATHER]},  # the Chat shape, not the flat Responses one
        {
            "message": "Missing required parameter: 'tools[0].name'.",
            "param": "tools[0].name",
            "code": "missing_required_parameter",
        },
    ),
    (
        {
            "input": [
                {"role": "user", "content": "hi"},
                {"type": "reasoning", "id": "rs_fake", "summary": [], "encrypted_content": "gAAA"},
            ]
        },
        {
            "message": "The encrypted content for item rs_fake could not be verified.",
            "param": "input",
            "code": "invalid_encrypted_content",
        },
    ),
    (
        {"input": [{"role": "user", "content": "hi"}, {**_fc("call_1"), "arguments": {}}]},
        {
            "message": "Invalid type for 'input[1].arguments': expected a string, but got an "
            "object instead.",
            "param": "input[1].arguments",
            "code": "invalid_type",
        },
    ),
]


@pytest.mark.parametrize(("params", "expected"), RESPONSES_ERRORS)
def test_responses_validation_errors(
    sim: OpenAISimulator,
    client: openai.OpenAI,
    params: dict[str, Any],
    expected: dict[str, Any],
) -> None:
    sim.add("never used")
    with pytest.raises(openai.BadRequestError) as caught:
        respond(client, **params)
    assert error_of(caught.value) == {**expected, "type": "invalid_request_error"}
    assert expected["message"] in str(caught.value)
    assert sim.pending == 1
    assert respond(client).output_text == "never used"


def test_responses_valid_tool_loop(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add("done")
    items: Any = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        _fc("call_1"),
        _fc("call_2"),
        _fco("call_2"),
        _fco("call_1"),
    ]
    assert respond(client, input=items, tools=[FLAT_WEATHER]).output_text == "done"


# --- faults --------------------------------------------------------------------------------


def test_rate_limit_fault_with_retry_headers(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(
        SimFault(status=429, retry_after=2, retry_after_ms=1500, should_retry=True),
        SimFault(status=429, code="insufficient_quota", should_retry=False),
    )
    with pytest.raises(openai.RateLimitError) as caught:
        chat(client)
    error = caught.value
    assert error.status_code == 429
    assert error.code == "rate_limit_exceeded"
    assert error.type == "requests"
    assert error.response.headers["retry-after"] == "2"
    assert error.response.headers["retry-after-ms"] == "1500"
    assert error.response.headers["x-should-retry"] == "true"
    assert str(error.request_id).startswith("req_")
    with pytest.raises(openai.RateLimitError) as quota:
        respond(client)
    assert error_of(quota.value) == {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota",
        "param": None,
        "code": "insufficient_quota",
    }
    assert quota.value.response.headers["x-should-retry"] == "false"
    assert "retry-after" not in quota.value.response.headers


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_error_faults(sim: OpenAISimulator, client: openai.OpenAI, status: int) -> None:
    sim.add(
        SimFault(status=status, message="custom", headers={"x-extra": "1"}),
        SimFault(status=status),
    )
    with pytest.raises(openai.InternalServerError) as caught:
        chat(client)
    assert caught.value.status_code == status
    assert error_of(caught.value)["message"] == "custom"
    assert error_of(caught.value)["type"] == "server_error"
    assert caught.value.response.headers["x-extra"] == "1"
    with pytest.raises(openai.InternalServerError) as second:
        respond(client)
    assert error_of(second.value)["message"]


def test_fault_precedes_validation(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(SimFault(status=503))
    with pytest.raises(openai.InternalServerError):
        chat(client, messages=[])  # invalid, but the edge answers first


def test_sdk_retries_honour_retry_after_ms(sim: OpenAISimulator) -> None:
    sim.add(SimFault(status=429, retry_after_ms=10), SimFault(status=503, retry_after=0.01), "ok")
    with openai.OpenAI(base_url=sim.url, api_key="test", max_retries=2) as retrying:
        started = time.monotonic()
        assert chat(retrying).choices[0].message.content == "ok"
        assert time.monotonic() - started < 5
    assert len(sim.requests) == 3


async def test_chat_stream_error_raises_while_iterating(
    sim: OpenAISimulator, aclient: openai.AsyncOpenAI
) -> None:
    sim.add(
        SimStreamError(
            after_events=2, message="The server had an error.", reply=sim.text("x" * 60)
        ),
        SimStreamError(code="rate_limit_exceeded", type="requests"),
    )
    seen: list[ChatCompletionChunk] = []
    stream = await aclient.chat.completions.create(model=MODEL, messages=HI, stream=True)
    with pytest.raises(openai.APIError) as caught:
        await collect(stream, seen)
    assert len(seen) == 2
    assert caught.value.message == "The server had an error."
    assert error_of(caught.value)["type"] == "server_error"
    assert error_of(caught.value)["code"] == "server_error"
    with pytest.raises(openai.RateLimitError):  # non-streaming: the matching HTTP error
        await achat(aclient)


def test_responses_stream_error_event(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(SimStreamError(after_events=3, code="server_error"), SimStreamError(after_events=1))
    seen: list[str] = []
    with (
        pytest.raises(openai.APIError) as caught,
        client.responses.stream(model=MODEL, input="hi") as stream,
    ):
        seen.extend(event.type for event in stream)
    assert seen == ["response.created", "response.in_progress", "response.output_item.added"]
    assert error_of(caught.value)["code"] == "server_error"
    _, _, raw = raw_post(sim, "/v1/responses", {"model": MODEL, "input": "hi", "stream": True})
    events = parse_responses_sse(raw)
    error = events[-1]
    assert error["type"] == "error"
    assert error["sequence_number"] == 1
    assert error["code"] == "server_error"
    assert error["message"] == error["error"]["message"]
    assert error["param"] is None


@pytest.mark.parametrize("endpoint", ["chat", "responses"])
async def test_cut_stream(sim: OpenAISimulator, aclient: openai.AsyncOpenAI, endpoint: str) -> None:
    sim.add(SimCut(after_events=2, reply=sim.text("a long enough text to stream " * 4)))
    seen: list[object] = []
    if endpoint == "chat":
        stream: Any = await aclient.chat.completions.create(model=MODEL, messages=HI, stream=True)
    else:
        stream = await aclient.responses.create(model=MODEL, input="hi", stream=True)
    with pytest.raises((httpx2.TransportError, openai.APIConnectionError)):
        await collect(stream, seen)
    assert len(seen) == 2


@pytest.mark.parametrize("endpoint", ["chat", "responses"])
def test_stream_faults_on_non_streaming_requests(
    sim: OpenAISimulator, client: openai.OpenAI, endpoint: str
) -> None:
    sim.add(SimCut(), SimTruncated(), SimStreamError(code="server_error"))
    ask = chat if endpoint == "chat" else respond
    for _ in range(2):  # half a body, then the connection drops
        with pytest.raises((httpx2.TransportError, openai.APIConnectionError)):
            ask(client)
    with pytest.raises(openai.InternalServerError) as caught:
        ask(client)
    assert error_of(caught.value)["code"] == "server_error"


def test_malformed(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(SimMalformed(), SimMalformed(after_events=1), SimMalformed(after_events=2))
    with pytest.raises((json.JSONDecodeError, openai.APIResponseValidationError)):
        chat(client)
    seen: list[ChatCompletionChunk] = []
    stream = client.chat.completions.create(model=MODEL, messages=HI, stream=True)
    with pytest.raises(json.JSONDecodeError), stream:
        seen.extend(stream)
    assert len(seen) == 1
    events: list[str] = []
    with (
        pytest.raises(json.JSONDecodeError),
        client.responses.stream(model=MODEL, input="hi") as rstream,
    ):
        events.extend(e.type for e in rstream)
    assert events == ["response.created", "response.in_progress"]


def test_chat_truncated_stream(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(
        SimTruncated(reply=sim.text("cut short " * 5)),
        SimTruncated(after_events=1),
    )
    chunks = chat_chunks(client, stream_options={"include_usage": True})
    assert chunks  # the stream ended cleanly ...
    assert all(c.choices and c.choices[0].finish_reason is None for c in chunks)  # ... unfinished
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "cut short " * 5
    status, _, raw = raw_post(
        sim, "/v1/chat/completions", {"model": MODEL, "messages": HI, "stream": True}
    )
    assert status == 200
    payloads, done = parse_chat_sse(raw)
    assert not done
    assert len(payloads) == 1


def test_responses_truncated_stream(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add(SimTruncated(), SimTruncated())
    with (
        client.responses.stream(model=MODEL, input="hi") as stream,
        pytest.raises(RuntimeError, match=r"response\.completed"),
    ):
        stream.get_final_response()
    types = event_types(response_events(client))
    assert types[-1] == "response.output_item.done"
    assert not any(t in ("response.completed", "response.incomplete") for t in types)


def test_request_id_on_every_response(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add("a", "b", "c", "d", SimFault(status=500))
    ids: list[str] = []
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=HI)
    ids.append(raw.headers["x-request-id"])
    assert raw.parse().choices[0].message.content == "a"
    streamed = client.chat.completions.with_raw_response.create(
        model=MODEL, messages=HI, stream=True
    )
    ids.append(streamed.headers["x-request-id"])
    for _ in streamed.parse():
        pass
    answered = client.responses.with_raw_response.create(model=MODEL, input="hi")
    ids.append(answered.headers["x-request-id"])
    assert answered.parse().output_text == "c"
    with client.responses.stream(model=MODEL, input="hi") as stream:
        stream.until_done()
    with pytest.raises(openai.InternalServerError) as caught:
        chat(client)
    ids.append(str(caught.value.request_id))
    with pytest.raises(openai.BadRequestError) as bad:
        respond(client, input=[_fco("call_x")])
    ids.append(str(bad.value.request_id))
    with pytest.raises(openai.InternalServerError) as exhausted:
        respond(client)
    ids.append(str(exhausted.value.request_id))
    status, headers, body = raw_post(sim, "/v1/embeddings", {})
    assert status == 404
    assert json.loads(body)["error"]["message"] == "Invalid URL (POST /v1/embeddings)"
    ids.append(headers["x-request-id"])
    status, headers, _ = raw_post(sim, "/v1/chat/completions", None, method="GET")
    assert status == 404
    ids.append(headers["x-request-id"])
    assert all(i.startswith("req_") for i in ids)
    assert len(set(ids)) == len(ids)


def test_missing_api_key_and_bad_bodies(sim: OpenAISimulator) -> None:
    status, headers, body = raw_post(
        sim, "/v1/chat/completions", {}, headers={"content-type": "application/json"}
    )
    assert status == 401
    assert headers["x-request-id"].startswith("req_")
    error = json.loads(body)["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith("You didn't provide an API key.")
    status, _, body = raw_post(sim, "/v1/responses", None, data=b"{not json")
    assert status == 400
    assert json.loads(body)["error"]["message"].startswith(
        "We could not parse the JSON body of your request."
    )
    status, _, body = raw_post(sim, "/v1/chat/completions", {"messages": HI})
    assert status == 400
    assert json.loads(body)["error"]["message"] == "you must provide a model parameter"


def test_body_too_large() -> None:
    with sim_client(max_body_bytes=1000) as (_, c):
        with pytest.raises(openai.APIStatusError) as caught:
            chat(c, messages=[{"role": "user", "content": "x" * 2000}])
        assert caught.value.status_code == 413


# --- token counting and prompt caching -----------------------------------------------------


def long_history(turns: int) -> list[dict[str, Any]]:
    """A conversation whose prefix is far above 1024 simulated tokens."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are precise. " * 400}]
    for n in range(turns):
        messages.append({"role": "user", "content": f"question {n}"})
        messages.append({"role": "assistant", "content": f"answer {n}"})
    messages.append({"role": "user", "content": "final question"})
    return messages


def test_token_counting_is_deterministic() -> None:
    assert text_tokens("") == 0
    assert text_tokens("abcd") == 1
    assert text_tokens("abcde") == 2
    assert text_tokens("é" * 4) == 2  # bytes, not characters
    # {"content":"hi","role":"user"}\n is 31 bytes → 8 tokens.
    assert prompt_tokens({"messages": HI}) == 8
    assert prompt_tokens({"input": "hi"}) == 8  # a string input is one user message
    with_tools = prompt_tokens({"input": "hi", "tools": [FLAT_WEATHER], "instructions": "x"})
    assert with_tools > 8


def test_chat_prompt_caching(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add("one", "two", "three", "four")
    first_messages = long_history(2)
    first = chat(client, messages=first_messages).usage
    assert first is not None
    assert first.prompt_tokens >= 1024
    assert first.prompt_tokens_details is not None
    assert first.prompt_tokens_details.cached_tokens == 0
    assert first.prompt_tokens_details.cache_write_tokens == first.prompt_tokens // 128 * 128

    # The next turn repeats the long prefix: a hit in 128-token increments.
    second_messages = [
        *first_messages,
        {"role": "assistant", "content": "one"},
        {"role": "user", "content": "next"},
    ]
    second = chat(client, messages=second_messages).usage
    assert second is not None
    assert second.prompt_tokens_details is not None
    cached = second.prompt_tokens_details.cached_tokens or 0
    assert cached >= 1024
    assert cached % 128 == 0
    assert first.prompt_tokens - 128 < cached <= first.prompt_tokens
    assert second.prompt_tokens == prompt_tokens({"messages": second_messages})  # includes cached

    # An identical prompt reads everything up to its last 128-token boundary.
    third = chat(client, messages=second_messages).usage
    assert third is not None
    assert third.prompt_tokens_details is not None
    assert third.prompt_tokens_details.cached_tokens == third.prompt_tokens // 128 * 128

    # Another model does not share the cache.
    other = chat(client, model="gpt-4o", messages=second_messages).usage
    assert other is not None
    assert other.prompt_tokens_details is not None
    assert other.prompt_tokens_details.cached_tokens == 0


def test_short_prompts_are_never_cached(sim: OpenAISimulator, client: openai.OpenAI) -> None:
    sim.add("a", "b")
    messages: Any = [{"role": "user", "content": "x" * 3000}]  # ~760 tokens
    assert prompt_tokens({"messages": messages}) < 1024
    for _ in range(2):
        usage = chat(client, messages=messages).usage
        assert usage is not None
        assert usage.prompt_tokens_details is not None
        assert usage.prompt_tokens_details.cached_tokens == 0
        assert usage.prompt_tokens_details.cache_write_tokens == 0


def test_responses_prompt_caching_and_cache_key(
    sim: OpenAISimulator, client: openai.OpenAI
) -> None:
    sim.add("a", "b", "c", "d")
    instructions = "Follow the rules carefully. " * 200
    items: Any = [{"role": "user", "content": "first"}]
    first = respond(client, instructions=instructions, input=items, prompt_cache_key="k1")
    assert first.usage is not None
    assert first.usage.input_tokens_details.cached_tokens == 0
    longer: Any = [*items, {"role": "assistant", "content": "a"}, {"role": "user", "content": "2"}]
    second = respond(client, instructions=instructions, input=longer, prompt_cache_key="k1")
    assert second.usage is not None
    cached = second.usage.input_tokens_details.cached_tokens
    assert cached >= 1024
    assert cached % 128 == 0
    assert second.usage.input_tokens >= cached
    # A different prompt_cache_key is a different cache scope (sim choice).
    third = respond(client, instructions=instructions, input=longer, prompt_cache_key="k2")
    assert third.usage is not None
    assert third.usage.input_tokens_details.cached_tokens == 0
    # Streaming reports the same accounting in the terminal event.
    events = response_events(client, instructions=instructions, input=longer, prompt_cache_key="k2")
    terminal = events[-1]
    assert terminal.type == "response.completed"
    assert terminal.response.usage is not None
    assert terminal.response.usage.input_tokens_details.cached_tokens == cached


def test_cache_ttl_and_extended_retention() -> None:
    clock = SimClock()
    messages = long_history(1)
    with sim_client(clock=clock, fallback="ok", cache_ttl=300) as (_, c):

        def cached(**params: Any) -> int:
            usage = chat(c, messages=messages, **params).usage
            assert usage is not None
            assert usage.prompt_tokens_details is not None
            return usage.prompt_tokens_details.cached_tokens or 0

        assert cached() == 0
        clock.advance(299)
        assert cached() > 0  # a hit refreshes the entry
        clock.advance(299)
        assert cached() > 0
        clock.advance(301)
        assert cached() == 0  # expired
        assert cached(prompt_cache_retention="24h") > 0
        clock.advance(3600)
        assert cached() > 0  # the 24h write outlives the in-memory TTL


async def test_concurrent_identical_requests_all_miss(sim: OpenAISimulator) -> None:
    barrier = threading.Barrier(2, timeout=10)

    def wait_for_both(request: dict[str, Any]) -> str:
        barrier.wait()
        return "together"

    sim.add(wait_for_both, wait_for_both, "after")
    messages = long_history(1)
    async with openai.AsyncOpenAI(base_url=sim.url, api_key="test", max_retries=0) as c:
        first, second = await asyncio.gather(
            achat(c, messages=messages), achat(c, messages=messages)
        )
        for completion in (first, second):
            assert completion.usage is not None
            assert completion.usage.prompt_tokens_details is not None
            assert completion.usage.prompt_tokens_details.cached_tokens == 0
        third = await achat(c, messages=messages)
        assert third.usage is not None
        assert third.usage.prompt_tokens_details is not None
        assert (third.usage.prompt_tokens_details.cached_tokens or 0) > 0


# --- command line --------------------------------------------------------------------------


def test_module_entry_point_serves_until_interrupted() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "dive.testing.openai", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/v1")
        with openai.OpenAI(base_url=url, api_key="test", max_retries=0) as c:
            said = chat(c, messages=[{"role": "user", "content": "marco"}])
            assert said.choices[0].message.content == "echo: marco"
            parts: Any = [{"role": "user", "content": [{"type": "input_text", "text": "polo"}]}]
            assert respond(c, input=parts).output_text == "echo: polo"
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0
        if process.stdout is not None:
            process.stdout.close()
