"""The Gemini ``generateContent`` simulator, driven through the official ``google-genai`` SDK."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import httpx2
import pytest
from google.genai import errors, types
from google.genai.client import AsyncClient, Client

import dive.testing.gemini as simpkg
from dive.testing.gemini import (
    FINISH_REASONS,
    GeminiSimulator,
    SimBlocked,
    SimCut,
    SimFault,
    SimMalformed,
    SimReply,
    SimStreamError,
    function_call_part,
    part_tokens,
    prompt_tokens,
    signature_bytes,
    simulator,
    text_part,
    thought_part,
)

MODEL = "gemini-2.5-flash"
GENERATE = f"/v1/models/{MODEL}:generateContent"  # google-genai 3.x defaults to v1
STREAM = f"/v1/models/{MODEL}:streamGenerateContent?alt=sse"
REQUIRED_FINISH_REASONS = (
    "STOP",
    "MAX_TOKENS",
    "SAFETY",
    "RECITATION",
    "MALFORMED_FUNCTION_CALL",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "OTHER",
)
WEATHER = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="Weather for a city.",
            parameters_json_schema={
                "type": "object",
                "properties": {"city": {"type": "string"}},
            },
        )
    ]
)


@pytest.fixture
def sim() -> Iterator[GeminiSimulator]:
    with simulator(assert_consumed=True) as s:
        yield s


def http_options(sim: GeminiSimulator, **options: Any) -> types.HttpOptions:
    return types.HttpOptions(base_url=sim.url, **options)


@pytest.fixture
def client(sim: GeminiSimulator) -> Iterator[Client]:
    with Client(api_key="test", http_options=http_options(sim)) as c:
        yield c


@pytest.fixture
async def aclient(sim: GeminiSimulator) -> AsyncIterator[AsyncClient]:
    with Client(api_key="test", http_options=http_options(sim)) as c:
        async with c.aio as a:
            yield a


# The SDK's content union names PIL.Image, unknown here: hence the narrow ignores below.


def generate(client: Client, contents: Any = "hi", **config: Any) -> types.GenerateContentResponse:
    cfg = types.GenerateContentConfig(**config) if config else None
    models = client.models
    return models.generate_content(model=MODEL, contents=contents, config=cfg)  # pyright: ignore[reportUnknownMemberType]


async def agenerate(
    client: AsyncClient, contents: Any = "hi", **config: Any
) -> types.GenerateContentResponse:
    cfg = types.GenerateContentConfig(**config) if config else None
    models = client.models
    return await models.generate_content(model=MODEL, contents=contents, config=cfg)  # pyright: ignore[reportUnknownMemberType]


def chunks_of(client: Client, contents: Any = "hi") -> Iterator[types.GenerateContentResponse]:
    models = client.models
    return models.generate_content_stream(model=MODEL, contents=contents)  # pyright: ignore[reportUnknownMemberType]


def stream(client: Client, contents: Any = "hi") -> list[types.GenerateContentResponse]:
    return list(chunks_of(client, contents))


def collect(client: Client, seen: list[str]) -> None:
    """Iterate a stream, recording each chunk's text (what arrived before a failure)."""
    for chunk in chunks_of(client):
        seen.append(chunk.text or "")


async def achunks_of(
    client: AsyncClient, contents: Any = "hi"
) -> AsyncIterator[types.GenerateContentResponse]:
    models = client.models
    return await models.generate_content_stream(model=MODEL, contents=contents)  # pyright: ignore[reportUnknownMemberType]


async def astream(client: AsyncClient, contents: Any = "hi") -> list[types.GenerateContentResponse]:
    return [chunk async for chunk in await achunks_of(client, contents)]


async def acollect(chunks: AsyncIterator[types.GenerateContentResponse], seen: list[str]) -> None:
    async for chunk in chunks:
        seen.append(chunk.text or "")


def candidate(response: types.GenerateContentResponse) -> types.Candidate:
    assert response.candidates is not None
    assert len(response.candidates) == 1
    return response.candidates[0]


def parts_of(response: types.GenerateContentResponse) -> list[types.Part]:
    content = candidate(response).content
    assert content is not None
    assert content.role == "model"
    assert content.parts is not None
    return content.parts


def dumped(parts: list[types.Part]) -> list[dict[str, Any]]:
    """Parts as REST JSON (camelCase), without signatures."""
    return [
        p.model_dump(mode="json", exclude_none=True, by_alias=True, exclude={"thought_signature"})
        for p in parts
    ]


def streamed_parts(chunks: list[types.GenerateContentResponse]) -> list[types.Part]:
    """The chunks' parts with consecutive text pieces of one kind merged (signature kept)."""
    merged: list[types.Part] = []
    for chunk in chunks:
        content = candidate(chunk).content
        for part in (content.parts if content else None) or []:
            last = merged[-1] if merged else None
            if (
                last is not None
                and part.text is not None
                and last.text is not None
                and bool(last.thought) == bool(part.thought)
                and last.thought_signature is None
            ):
                merged[-1] = last.model_copy(
                    update={
                        "text": last.text + part.text,
                        "thought_signature": part.thought_signature,
                    }
                )
            else:
                merged.append(part)
    return merged


def usage_of(response: types.GenerateContentResponse) -> dict[str, Any]:
    assert response.usage_metadata is not None
    return response.usage_metadata.model_dump(mode="json", exclude_none=True, by_alias=True)


def error_body(error: errors.APIError) -> dict[str, Any]:
    """The JSON error body the SDK keeps on ``details`` (loosely typed by the SDK)."""
    body: object = error.details  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    assert isinstance(body, dict)
    return cast(dict[str, Any], body)


def error_headers(error: errors.APIError) -> httpx2.Headers:
    response: object = error.response  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    assert isinstance(response, httpx2.Response)
    return response.headers


def b64(signature: bytes | None) -> str:
    assert signature is not None
    return base64.b64encode(signature).decode()


def user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def answers(*names: str, ids: tuple[str | None, ...] = ()) -> types.Content:
    """A function response turn answering ``names`` (with ``ids`` when given)."""
    parts = [
        types.Part(
            function_response=types.FunctionResponse(
                name=name, response={"result": "ok"}, id=ids[i] if i < len(ids) else None
            )
        )
        for i, name in enumerate(names)
    ]
    return types.Content(role="user", parts=parts)


def model_turn(*parts: types.Part) -> types.Content:
    return types.Content(role="model", parts=list(parts))


def unsigned(part: types.Part) -> types.Part:
    return part.model_copy(update={"thought_signature": None})


def raw_post(
    sim: GeminiSimulator, path: str, body: object, *, key: str | None = "test"
) -> tuple[int, dict[str, str], bytes]:
    """A request without the SDK, to see the exact bytes."""
    headers = {"content-type": "application/json"}
    if key is not None:
        headers["x-goog-api-key"] = key
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(sim.url + path, data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            found = {k.lower(): v for k, v in response.headers.items()}
            return response.status, found, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def parse_sse(raw: bytes) -> list[dict[str, Any]]:
    """Split a data-only SSE body, checking the ``data: …\\r\\n\\r\\n`` framing."""
    text = raw.decode()
    assert text.endswith("\r\n\r\n")
    chunks: list[dict[str, Any]] = []
    for event in text.split("\r\n\r\n")[:-1]:
        assert "\n" not in event
        assert event.startswith("data: ")
        chunks.append(json.loads(event[len("data: ") :]))
    return chunks


HI_BODY: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


# --- public surface ----------------------------------------------------------------------


def test_public_names() -> None:
    assert sorted(simpkg.__all__) == sorted(
        [
            "BYPASS_SIGNATURES",
            "FINISH_REASONS",
            "GeminiSimulator",
            "Reply",
            "ScriptItem",
            "SimBlocked",
            "SimCut",
            "SimFault",
            "SimMalformed",
            "SimReply",
            "SimRequest",
            "SimStreamError",
            "blocked",
            "function_call",
            "function_call_part",
            "function_calls",
            "part_tokens",
            "prompt_tokens",
            "reply",
            "signature_bytes",
            "simulator",
            "text",
            "text_part",
            "thought_part",
        ]
    )
    assert set(REQUIRED_FINISH_REASONS) <= set(FINISH_REASONS)


def test_start_stop_and_url() -> None:
    sim = GeminiSimulator().start()
    try:
        assert sim.url.startswith("http://127.0.0.1:")
        with pytest.raises(RuntimeError):
            sim.start()
    finally:
        sim.stop()
    sim.stop()  # idempotent


# --- generateContent ----------------------------------------------------------------------


def test_text_reply_and_recording(sim: GeminiSimulator, client: Client) -> None:
    sim.add(sim.text("Hello there, how can I help you today?"))
    response = generate(client, "hi")
    assert response.text == "Hello there, how can I help you today?"
    assert dumped(parts_of(response)) == [{"text": "Hello there, how can I help you today?"}]
    assert candidate(response).finish_reason == types.FinishReason.STOP
    assert candidate(response).index == 0
    assert response.model_version == MODEL
    assert response.response_id
    assert parts_of(response)[0].thought_signature is None  # no thoughts, no calls
    recorded = sim.requests[0]
    assert recorded.method == "POST"
    assert recorded.path == GENERATE
    assert (recorded.model, recorded.stream, recorded.api_version) == (MODEL, False, "v1")
    assert recorded.headers["x-goog-api-key"] == "test"
    assert recorded.headers["content-type"] == "application/json"
    assert recorded["contents"] == [{"parts": [{"text": "hi"}], "role": "user"}]
    assert dict(recorded) == recorded.body
    assert json.loads(recorded.raw) == recorded.body
    assert sim.generate_requests == sim.requests


def test_v1beta_and_request_shapes(sim: GeminiSimulator) -> None:
    sim.add("ok")
    with Client(api_key="k2", http_options=http_options(sim, api_version="v1beta")) as c:
        generate(
            c,
            [user("hi")],
            system_instruction="Be brief.",
            temperature=0.2,
            max_output_tokens=100,
            stop_sequences=["END"],
            tools=[WEATHER],
            tool_config=types.ToolConfig(
                function_calling_config=types.FunctionCallingConfig(
                    mode=types.FunctionCallingConfigMode.ANY,
                    allowed_function_names=["get_weather"],
                )
            ),
            thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=1024),
        )
    recorded = sim.requests[0]
    assert recorded.path == f"/v1beta/models/{MODEL}:generateContent"
    assert recorded.api_version == "v1beta"
    assert recorded.headers["x-goog-api-key"] == "k2"
    body = recorded.body
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}], "role": "user"}
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
    assert body["toolConfig"] == {
        "functionCallingConfig": {"allowedFunctionNames": ["get_weather"], "mode": "ANY"}
    }
    config = body["generationConfig"]
    assert (config["temperature"], config["maxOutputTokens"]) == (0.2, 100)
    assert config["stopSequences"] == ["END"]
    # The SDK passes ThinkingConfig through in snake_case (proto JSON accepts both).
    assert config["thinkingConfig"] == {"include_thoughts": True, "thinking_budget": 1024}


def test_raw_response_shape(sim: GeminiSimulator) -> None:
    sim.add(sim.text("abcdefgh", thought="ponder"))
    status, headers, raw = raw_post(sim, f"/v1beta/models/{MODEL}:generateContent", HI_BODY)
    assert status == 200
    assert headers["content-type"].startswith("application/json")
    body = json.loads(raw)
    assert list(body) == ["candidates", "usageMetadata", "modelVersion", "responseId"]
    first = body["candidates"][0]
    assert list(first) == ["content", "finishReason", "index"]
    assert first["content"]["role"] == "model"
    thought, answer = first["content"]["parts"]
    assert thought == {"text": "ponder", "thought": True}
    assert answer["text"] == "abcdefgh"
    assert sim.issued_signature(answer["thoughtSignature"])  # last part of a reply with thoughts
    assert first["finishReason"] == "STOP"
    assert body["usageMetadata"] == {
        "promptTokenCount": 1,
        "candidatesTokenCount": 2,
        "totalTokenCount": 5,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 1}],
        "thoughtsTokenCount": 2,
    }
    assert body["modelVersion"] == MODEL


async def test_function_call_without_id_async(sim: GeminiSimulator, aclient: AsyncClient) -> None:
    sim.add(sim.function_call("get_weather", {"city": "Paris", "days": [1, 2]}))
    response = await agenerate(aclient, "weather?", tools=[WEATHER])
    assert candidate(response).finish_reason == types.FinishReason.STOP
    calls = response.function_calls
    assert calls is not None
    assert len(calls) == 1
    assert (calls[0].name, calls[0].args, calls[0].id) == (
        "get_weather",
        {"city": "Paris", "days": [1, 2]},
        None,
    )
    part = parts_of(response)[0]
    assert part.thought_signature is not None
    assert sim.issued_signature(b64(part.thought_signature))


async def test_function_call_with_id_async(sim: GeminiSimulator, aclient: AsyncClient) -> None:
    sim.add(sim.function_call("get_weather", {"city": "Oslo"}, id="call-7"), "Cold.")
    response = await agenerate(aclient, "weather?", tools=[WEATHER])
    calls = response.function_calls
    assert calls is not None
    assert calls[0].id == "call-7"
    history = [
        user("weather?"),
        model_turn(*parts_of(response)),
        answers("get_weather", ids=("call-7",)),
    ]
    follow_up = await agenerate(aclient, history, tools=[WEATHER])
    assert follow_up.text == "Cold."
    sent = sim.requests[1]["contents"]
    assert sent[1]["parts"][0]["functionCall"]["id"] == "call-7"
    assert sent[2]["parts"][0]["functionResponse"] == {
        "id": "call-7",
        "name": "get_weather",
        "response": {"result": "ok"},
    }


def test_parallel_calls_only_first_signed(sim: GeminiSimulator, client: Client) -> None:
    sim.add(
        sim.function_calls(
            ("get_weather", {"city": "Paris"}),
            function_call_part("get_time", {"zone": "CET"}, id="t1"),
            ("get_weather", {"city": "Rome"}),
            thought="Three lookups.",
        )
    )
    response = generate(client, "x", tools=[WEATHER])
    parts = parts_of(response)
    assert dumped(parts) == [
        {"text": "Three lookups.", "thought": True},
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
        {"functionCall": {"name": "get_time", "args": {"zone": "CET"}, "id": "t1"}},
        {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
    ]
    assert [p.thought_signature is not None for p in parts] == [False, True, False, False]
    assert response.function_calls is not None
    assert [c.name for c in response.function_calls] == ["get_weather", "get_time", "get_weather"]


def test_thought_parts_and_usage(sim: GeminiSimulator, client: Client) -> None:
    sim.add(sim.reply(thought_part("a" * 40), thought_part("b" * 8), text_part("c" * 12)))
    response = generate(client, "hi")
    parts = parts_of(response)
    assert [(p.thought, p.text) for p in parts] == [
        (True, "a" * 40),
        (True, "b" * 8),
        (None, "c" * 12),
    ]
    assert [p.thought_signature is not None for p in parts] == [False, False, True]
    assert response.text == "c" * 12  # the SDK leaves thoughts out of .text
    usage = response.usage_metadata
    assert usage is not None
    assert (usage.thoughts_token_count, usage.candidates_token_count) == (12, 3)
    assert usage.total_token_count == 1 + 12 + 3


def test_signature_choices(sim: GeminiSimulator, client: Client) -> None:
    explicit = base64.b64encode(b"my-own-signature").decode()
    sim.add(
        SimReply(parts=[function_call_part("get_weather", {"city": "A"})], signatures=False),
        sim.reply(function_call_part("get_weather", {"city": "B"}, signature=explicit)),
        sim.reply(
            function_call_part("get_weather", {"city": "C"}, unsigned=True),
            function_call_part("get_weather", {"city": "D"}),
        ),
        sim.reply(text_part("plain", signature=explicit)),
    )
    assert parts_of(generate(client))[0].thought_signature is None
    assert parts_of(generate(client))[0].thought_signature == b"my-own-signature"
    assert [p.thought_signature for p in parts_of(generate(client))] == [None, None]
    assert parts_of(generate(client))[0].thought_signature == b"my-own-signature"
    assert sim.issued_signature(explicit)
    assert not sim.issued_signature(base64.b64encode(b"never issued").decode())


def test_signature_bytes_accepts_both_alphabets() -> None:
    raw = bytes([0xFB, 0xFF, 0xFE, 0x3E, 0x3F])
    standard = base64.b64encode(raw).decode()
    urlsafe = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    assert standard != urlsafe
    assert signature_bytes(standard) == signature_bytes(urlsafe) == raw
    assert signature_bytes("not base64!") == b"not base64!"


# --- streamGenerateContent ----------------------------------------------------------------


async def test_stream_text_async(sim: GeminiSimulator, aclient: AsyncClient) -> None:
    long_text = "The quick brown fox jumps over the lazy dog, " * 4
    sim.add(sim.text(long_text, thought="Thinking about foxes and dogs at length."))
    chunks = await astream(aclient)
    assert len(chunks) > 5
    assert "".join(c.text or "" for c in chunks) == long_text
    assert [candidate(c).finish_reason for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    assert candidate(chunks[-1]).finish_reason == types.FinishReason.STOP
    assert {c.response_id for c in chunks} == {chunks[0].response_id}
    assert {c.model_version for c in chunks} == {MODEL}
    merged = streamed_parts(chunks)
    assert dumped(merged) == [
        {"text": "Thinking about foxes and dogs at length.", "thought": True},
        {"text": long_text},
    ]
    assert merged[1].thought_signature is not None
    assert sim.requests[0].path == STREAM
    assert sim.requests[0].stream


def test_stream_sync_calls_in_one_chunk(sim: GeminiSimulator, client: Client) -> None:
    sim.add(sim.function_calls(("a", {"x": 1}), ("b", {"y": 2}), text="Calling both."))
    chunks = stream(client)
    last = candidate(chunks[-1])
    assert last.finish_reason == types.FinishReason.STOP
    assert last.content is not None
    assert dumped(last.content.parts or []) == [
        {"functionCall": {"name": "a", "args": {"x": 1}}},
        {"functionCall": {"name": "b", "args": {"y": 2}}},
    ]
    assert chunks[-1].function_calls is not None
    assert "".join(c.text or "" for c in chunks[:-1]) == "Calling both."


def test_stream_matches_non_stream(sim: GeminiSimulator, client: Client) -> None:
    parts = [thought_part("x" * 50), text_part("y" * 70), function_call_part("f", {"k": "v"})]
    sim.add(sim.reply(*parts), sim.reply(*parts))
    plain = generate(client)
    chunks = stream(client)
    assert dumped(streamed_parts(chunks)) == dumped(parts_of(plain))
    assert usage_of(chunks[-1]) == usage_of(plain)


def test_raw_sse_framing_and_running_usage(sim: GeminiSimulator) -> None:
    sim.add(sim.text("z" * 100, thought="t" * 40))
    path = f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
    status, headers, raw = raw_post(sim, path, HI_BODY)
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    assert b"event:" not in raw
    assert b"[DONE]" not in raw
    chunks = parse_sse(raw)
    assert len(chunks) == 3 + 7  # 40 thought and 100 text characters in pieces of 16
    for chunk in chunks:
        assert set(chunk) == {"candidates", "usageMetadata", "modelVersion", "responseId"}
        assert chunk["candidates"][0]["content"]["role"] == "model"
        assert len(chunk["candidates"][0]["content"]["parts"]) == 1
    assert ["finishReason" in c["candidates"][0] for c in chunks] == [False] * 9 + [True]
    totals = [c["usageMetadata"]["totalTokenCount"] for c in chunks]
    assert totals == sorted(totals)
    assert chunks[-1]["usageMetadata"] == {
        "promptTokenCount": 1,
        "candidatesTokenCount": 25,
        "totalTokenCount": 36,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 1}],
        "thoughtsTokenCount": 10,
    }
    signed = [
        p for c in chunks for p in c["candidates"][0]["content"]["parts"] if "thoughtSignature" in p
    ]
    assert signed == [chunks[-1]["candidates"][0]["content"]["parts"][0]]


def test_stream_without_alt_sse_is_a_json_array(sim: GeminiSimulator) -> None:
    sim.add(sim.text("q" * 20))
    status, _, raw = raw_post(sim, f"/v1beta/models/{MODEL}:streamGenerateContent", HI_BODY)
    assert status == 200
    chunks = json.loads(raw)
    assert isinstance(chunks, list)
    assert len(chunks) == 2  # type: ignore[arg-type]


def test_chunk_delay(sim: GeminiSimulator, client: Client) -> None:
    sim.add(SimReply(parts=[text_part("a" * 48)], delay=0.05, chunk_delay=0.01))
    started = time.monotonic()
    assert "".join(c.text or "" for c in stream(client)) == "a" * 48
    assert time.monotonic() - started >= 0.05 + 0.01 * 3


# --- thought signatures on replay -----------------------------------------------------------


def test_signature_round_trip_accepted(sim: GeminiSimulator, client: Client) -> None:
    sim.add(
        sim.function_calls(
            ("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"}), thought="Both."
        ),
        "Sunny in both.",
    )
    first = generate(client, [user("weather?")], tools=[WEATHER])
    history = [
        user("weather?"),
        model_turn(*parts_of(first)),
        answers("get_weather", "get_weather"),
    ]
    assert generate(client, history, tools=[WEATHER]).text == "Sunny in both."
    replayed = sim.requests[1]["contents"][1]["parts"]
    sent = replayed[1]["thoughtSignature"]
    issued = parts_of(first)[1].thought_signature
    # The SDK decodes the standard base64 served and sends it back URL-safe.
    assert signature_bytes(sent) == issued
    assert sim.issued_signature(sent)
    assert "thoughtSignature" not in replayed[2]  # the second parallel call never had one


async def test_stream_signature_round_trip_async(
    sim: GeminiSimulator, aclient: AsyncClient
) -> None:
    sim.add(sim.function_call("get_weather", {"city": "Oslo"}, thought="I will check."), "Cold.")
    chunks = await astream(aclient, [user("weather?")])
    history = [user("weather?"), model_turn(*streamed_parts(chunks)), answers("get_weather")]
    follow_up = await astream(aclient, history)
    assert "".join(c.text or "" for c in follow_up) == "Cold."


def test_stripped_signature_rejected(sim: GeminiSimulator, client: Client) -> None:
    sim.add(sim.function_call("get_weather", {"city": "Paris"}), "Sunny.")
    call = parts_of(generate(client, [user("weather?")]))[0]
    history = [user("weather?"), model_turn(unsigned(call)), answers("get_weather")]
    with pytest.raises(errors.ClientError) as caught:
        generate(client, history)
    assert caught.value.code == 400
    assert caught.value.status == "INVALID_ARGUMENT"
    assert caught.value.message == (
        "Function call is missing a thought_signature in functionCall parts. This is required "
        "for tools to work correctly, and missing thought_signature may lead to degraded model "
        "performance. Additional data, function call `default_api:get_weather` , position 2. "
        "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more "
        "details."
    )
    assert sim.pending == 1  # a rejected request consumes nothing
    history[1] = model_turn(call)
    assert generate(client, history).text == "Sunny."


async def test_stripped_signature_rejected_in_stream_async(
    sim: GeminiSimulator, aclient: AsyncClient
) -> None:
    sim.add(sim.function_call("get_weather", {"city": "Paris"}))
    call = streamed_parts(await astream(aclient, [user("weather?")]))[0]
    history = [user("weather?"), model_turn(unsigned(call)), answers("get_weather")]
    with pytest.raises(errors.ClientError, match="missing a thought_signature"):
        await astream(aclient, history)


def test_corrupted_signature_rejected(sim: GeminiSimulator, client: Client) -> None:
    sim.add(sim.function_call("get_weather", {"city": "Paris"}))
    call = parts_of(generate(client, [user("weather?")]))[0]
    assert call.thought_signature is not None
    edited = call.model_copy(update={"thought_signature": call.thought_signature[:-1] + b"!"})
    history = [user("weather?"), model_turn(edited), answers("get_weather")]
    with pytest.raises(errors.ClientError) as caught:
        generate(client, history)
    assert (caught.value.code, caught.value.message) == (400, "Corrupted thought signature.")


def test_dummy_signature_skips_validation(sim: GeminiSimulator, client: Client) -> None:
    sim.add(sim.function_call("get_weather", {"city": "Paris"}), "ok", "ok")
    call = parts_of(generate(client, [user("weather?")]))[0]
    for dummy in (b"skip_thought_signature_validator", b"context_engineering_is_the_way_to_go"):
        bypass = call.model_copy(update={"thought_signature": dummy})
        history = [user("weather?"), model_turn(bypass), answers("get_weather")]
        assert generate(client, history).text == "ok"


def test_only_the_current_turn_needs_signatures(sim: GeminiSimulator, client: Client) -> None:
    sim.add(sim.function_call("get_weather", {"city": "Paris"}), "Sunny.", "Bye.")
    call = parts_of(generate(client, [user("weather?")]))[0]
    generate(client, [user("weather?"), model_turn(call), answers("get_weather")])
    older = [
        user("weather?"),
        model_turn(unsigned(call)),
        answers("get_weather"),
        model_turn(types.Part(text="Sunny.")),
        user("thanks"),
    ]
    assert generate(client, older).text == "Bye."


def test_signature_checks_can_be_off() -> None:
    with (
        simulator(check_signatures=False) as lax,
        Client(api_key="t", http_options=http_options(lax)) as c,
    ):
        lax.add(lax.function_call("get_weather", {"city": "Paris"}), "ok")
        call = parts_of(generate(c, "weather?"))[0]
        history = [user("weather?"), model_turn(unsigned(call)), answers("get_weather")]
        assert generate(c, history).text == "ok"


def test_hand_built_history_is_not_checked(sim: GeminiSimulator, client: Client) -> None:
    sim.add("fine")
    history = [
        user("weather?"),
        model_turn(types.Part.from_function_call(name="get_weather", args={"city": "X"})),
        answers("get_weather"),
    ]
    assert generate(client, history).text == "fine"


# --- finish reasons, blocked prompts, usage ----------------------------------------------


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("reason", REQUIRED_FINISH_REASONS)
def test_finish_reasons(sim: GeminiSimulator, client: Client, reason: str, streamed: bool) -> None:
    sim.add(sim.text("Partial answer", finish_reason=reason))
    response = stream(client)[-1] if streamed else generate(client)
    assert candidate(response).finish_reason == types.FinishReason(reason)
    assert response.text == "Partial answer"


def test_finish_without_parts(sim: GeminiSimulator, client: Client) -> None:
    sim.add(
        SimReply(finish_reason="MAX_TOKENS", usage={"thoughtsTokenCount": 64}),
        SimReply(finish_reason="SAFETY"),
        SimReply(
            finish_reason="MALFORMED_FUNCTION_CALL",
            finish_message="Malformed function call: get_weather(",
        ),
    )
    max_tokens = candidate(generate(client))
    assert max_tokens.finish_reason == types.FinishReason.MAX_TOKENS
    assert max_tokens.content is not None
    assert (max_tokens.content.role, max_tokens.content.parts) == ("model", None)
    chunks = stream(client)
    assert len(chunks) == 1
    safety = candidate(chunks[0])
    assert (safety.finish_reason, safety.content) == (types.FinishReason.SAFETY, None)
    malformed = candidate(generate(client))
    assert malformed.finish_reason == types.FinishReason.MALFORMED_FUNCTION_CALL
    # The SDK's Gemini API converter drops finishMessage; it is on the wire.
    assert malformed.finish_message is None
    sim.add(SimReply(finish_reason="MALFORMED_FUNCTION_CALL", finish_message="Bad call."))
    _, _, raw = raw_post(sim, GENERATE, HI_BODY)
    assert json.loads(raw)["candidates"][0] == {
        "content": {"role": "model"},
        "finishReason": "MALFORMED_FUNCTION_CALL",
        "finishMessage": "Bad call.",
        "index": 0,
    }


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
def test_blocked_prompt(sim: GeminiSimulator, client: Client, streamed: bool) -> None:
    sim.add(sim.blocked("PROHIBITED_CONTENT", "Blocked by policy."))
    if streamed:
        chunks = stream(client)
        assert len(chunks) == 1
        response = chunks[0]
    else:
        response = generate(client)
    assert response.candidates is None
    assert response.text is None
    feedback = response.prompt_feedback
    assert feedback is not None
    assert feedback.block_reason == types.BlockedReason.PROHIBITED_CONTENT
    assert feedback.block_reason_message == "Blocked by policy."
    assert usage_of(response) == {
        "promptTokenCount": 1,
        "totalTokenCount": 1,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 1}],
    }


def test_blocked_raw_shape(sim: GeminiSimulator) -> None:
    sim.add(
        SimBlocked(safety_ratings=[{"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH"}])
    )
    status, _, raw = raw_post(sim, f"/v1beta/models/{MODEL}:generateContent", HI_BODY)
    assert status == 200
    body = json.loads(raw)
    assert "candidates" not in body
    assert body["promptFeedback"] == {
        "blockReason": "SAFETY",
        "safetyRatings": [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH"}],
    }


def test_usage_override(sim: GeminiSimulator, client: Client) -> None:
    sim.add(
        sim.text("abcd", usage={"cachedContentTokenCount": 300, "thoughtsTokenCount": 40}),
        sim.text("abcd", usage={"promptTokenCount": 1000, "cachedContentTokenCount": 600}),
        sim.text("abcd", usage={"totalTokenCount": 7, "promptTokensDetails": None}),
    )
    first = usage_of(generate(client))
    assert first == {
        "promptTokenCount": 300,  # raised to include the cached tokens
        "candidatesTokenCount": 1,
        "totalTokenCount": 341,
        "cachedContentTokenCount": 300,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 300}],
        "thoughtsTokenCount": 40,
        "cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 300}],
    }
    second = generate(client).usage_metadata
    assert second is not None
    assert (second.prompt_token_count, second.cached_content_token_count) == (1000, 600)
    assert second.total_token_count == 1001
    assert usage_of(generate(client)) == {
        "promptTokenCount": 1,
        "candidatesTokenCount": 1,
        "totalTokenCount": 7,
    }


def test_stream_usage_override_and_prompt_side_running(sim: GeminiSimulator) -> None:
    sim.add(sim.text("w" * 40, usage={"cachedContentTokenCount": 50}))
    _, _, raw = raw_post(sim, f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse", HI_BODY)
    chunks = parse_sse(raw)
    assert [c["usageMetadata"]["cachedContentTokenCount"] for c in chunks] == [50] * 3
    assert [c["usageMetadata"]["promptTokenCount"] for c in chunks] == [50] * 3
    assert [c["usageMetadata"]["candidatesTokenCount"] for c in chunks] == [4, 8, 10]


def test_deterministic_token_counts(sim: GeminiSimulator, client: Client) -> None:
    sim.add(sim.text("é" * 10), sim.text("é" * 10))
    config: dict[str, Any] = {"system_instruction": "You are terse.", "tools": [WEATHER]}
    first = generate(client, "What is the weather like in Paris?", **config)
    second = generate(client, "What is the weather like in Paris?", **config)
    assert usage_of(first) == usage_of(second)
    body = sim.requests[0].body
    assert first.usage_metadata is not None
    assert first.usage_metadata.prompt_token_count == prompt_tokens(body)
    expected = (
        4 + 9 + -(-len(json.dumps(body["tools"][0], sort_keys=True, separators=(",", ":"))) // 4)
    )
    assert prompt_tokens(body) == expected  # "You are terse." + the question + the tool
    assert first.usage_metadata.candidates_token_count == 5  # 20 UTF-8 bytes
    assert part_tokens({"text": ""}) == 1
    assert part_tokens(
        {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "x" * 99}
    ) == (part_tokens({"functionCall": {"name": "f", "args": {}}}))


# --- validation -----------------------------------------------------------------------------


def rejected(sim: GeminiSimulator, body: object, path: str = GENERATE) -> dict[str, Any]:
    status, headers, raw = raw_post(sim, path, body)
    assert status == 400
    assert headers["content-type"].startswith("application/json")
    error = json.loads(raw)["error"]
    assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT")
    return error


def test_missing_contents(sim: GeminiSimulator) -> None:
    empty: list[dict[str, Any]] = [{}, {"contents": []}]
    for body in empty:
        assert rejected(sim, body)["message"] == (
            "* GenerateContentRequest.contents: contents is not specified\n"
        )


def test_shape_errors(sim: GeminiSimulator) -> None:
    no_parts: dict[str, Any] = {"contents": [{"role": "user", "parts": []}]}
    assert rejected(sim, no_parts)["message"] == (
        "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.\n"
    )
    assert rejected(sim, {"contents": [{"role": "user", "parts": [{"thought": True}]}]})[
        "message"
    ] == (
        "* GenerateContentRequest.contents[0].parts[0].data: required oneof field 'data' must "
        "have one initialized field\n"
    )
    assert (
        rejected(sim, {"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]})["message"]
        == "Please use a valid role: user, model."
    )
    call: dict[str, Any] = {"functionCall": {"name": "", "args": {}}}
    assert rejected(sim, {"contents": [{"role": "model", "parts": [call]}]})["message"] == (
        "* GenerateContentRequest.contents[0].parts[0].function_call.name: Name cannot be empty.\n"
    )
    assert rejected(sim, [1, 2])["message"] == (
        "Invalid JSON payload received. Root element must be a message."
    )
    assert rejected(sim, b"{not json")["message"].startswith("Invalid JSON payload received.")
    snake: dict[str, Any] = {
        "contents": [{"role": "user", "parts": [{"text": "a"}]}],
        "system_instruction": {},
    }
    sim.add("snake_case top-level keys are not checked")
    assert raw_post(sim, GENERATE, snake)[0] == 200


def test_function_response_without_call(sim: GeminiSimulator, client: Client) -> None:
    with pytest.raises(errors.ClientError) as caught:
        generate(client, [user("hi"), answers("get_weather")])
    assert caught.value.code == 400
    assert caught.value.status == "INVALID_ARGUMENT"
    assert caught.value.message == (
        "Please ensure that function response turn comes immediately after a function call turn."
    )
    assert error_body(caught.value) == {
        "error": {
            "code": 400,
            "message": caught.value.message,
            "status": "INVALID_ARGUMENT",
        }
    }


def test_function_response_matching(sim: GeminiSimulator, client: Client) -> None:
    calls = model_turn(
        types.Part.from_function_call(name="a", args={}),
        types.Part.from_function_call(name="b", args={}),
    )
    with pytest.raises(errors.ClientError) as caught:
        generate(client, [user("hi"), calls, answers("a")])
    assert caught.value.message == (
        "Please ensure that the number of function response parts is equal to the number of "
        "function call parts of the function call turn."
    )
    with pytest.raises(errors.ClientError) as caught:
        generate(client, [user("hi"), calls, answers("a", "c")])
    assert caught.value.message == (
        "functionResponse `c` at contents[2].parts[1] matches no functionCall of the function "
        "call turn at contents[1]."
    )
    with_ids = model_turn(
        types.Part(function_call=types.FunctionCall(name="a", args={}, id="1")),
        types.Part(function_call=types.FunctionCall(name="a", args={}, id="2")),
    )
    with pytest.raises(errors.ClientError, match="matches no functionCall"):
        generate(client, [user("hi"), with_ids, answers("a", "a", ids=("1", "3"))])
    sim.add("matched")
    assert generate(client, [user("hi"), with_ids, answers("a", "a", ids=("2", "1"))]).text == (
        "matched"
    )


def test_function_call_turn_placement(sim: GeminiSimulator, client: Client) -> None:
    call = model_turn(types.Part.from_function_call(name="a", args={}))
    message = (
        "Please ensure that function call turn comes immediately after a user turn or after a "
        "function response turn."
    )
    with pytest.raises(errors.ClientError) as caught:
        generate(client, [call, answers("a")])
    assert caught.value.message == message
    with pytest.raises(errors.ClientError) as caught:
        generate(client, [user("hi"), model_turn(types.Part(text="x")), call, answers("a")])
    assert caught.value.message == message


def test_auth_and_routes(sim: GeminiSimulator) -> None:
    status, _, raw = raw_post(sim, GENERATE, HI_BODY, key=None)
    assert status == 403
    assert json.loads(raw)["error"]["status"] == "PERMISSION_DENIED"
    sim.add("key in the query")
    assert raw_post(sim, GENERATE + "?key=abc", HI_BODY, key=None)[0] == 200
    status, _, raw = raw_post(sim, f"/v1beta/models/{MODEL}:countTokens", HI_BODY)
    assert status == 404
    assert json.loads(raw)["error"] == {
        "code": 404,
        "message": "Requested entity was not found.",
        "status": "NOT_FOUND",
    }
    assert sim.requests[-1].route is None
    assert sim.requests[-1].model is None


# --- faults ---------------------------------------------------------------------------------


def test_rate_limit_with_retry_after(sim: GeminiSimulator, client: Client) -> None:
    sim.add(SimFault(status=429, retry_after=7))
    with pytest.raises(errors.ClientError) as caught:
        generate(client)
    error = caught.value
    assert (error.code, error.status) == (429, "RESOURCE_EXHAUSTED")
    assert error.message == "Resource has been exhausted (e.g. check quota)."
    assert error_body(error)["error"]["details"] == [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}
    ]
    assert error_headers(error)["retry-after"] == "7"


@pytest.mark.parametrize(
    ("status", "name"),
    [(500, "INTERNAL"), (503, "UNAVAILABLE"), (504, "DEADLINE_EXCEEDED")],
)
async def test_server_errors_async(
    sim: GeminiSimulator, aclient: AsyncClient, status: int, name: str
) -> None:
    sim.add(SimFault(status=status, message="boom"), SimFault(status=status))
    with pytest.raises(errors.ServerError) as caught:
        await agenerate(aclient)
    assert (caught.value.code, caught.value.status, caught.value.message) == (status, name, "boom")
    with pytest.raises(errors.ServerError) as caught:
        await astream(aclient)
    assert caught.value.code == status


def test_fault_options(sim: GeminiSimulator) -> None:
    sim.add(
        SimFault(
            status=400,
            message="User location is not supported for the API use.",
            error_status="FAILED_PRECONDITION",
            retry_after="Wed, 21 Oct 2026 07:28:00 GMT",
            details=[{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "X"}],
            headers={"x-extra": "1"},
        )
    )
    invalid: dict[str, Any] = {"contents": []}
    status, headers, raw = raw_post(sim, GENERATE, invalid)  # answered before validation
    assert status == 400
    assert headers["retry-after"] == "Wed, 21 Oct 2026 07:28:00 GMT"
    assert headers["x-extra"] == "1"
    assert json.loads(raw) == {
        "error": {
            "code": 400,
            "message": "User location is not supported for the API use.",
            "status": "FAILED_PRECONDITION",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "X"}],
        }
    }


def test_sdk_retry_options_against_faults(sim: GeminiSimulator) -> None:
    sim.add(SimFault(status=503), SimFault(status=429, retry_after=1), "finally")
    retry = types.HttpRetryOptions(attempts=3, initial_delay=0.01, max_delay=0.02, jitter=0)
    with Client(api_key="t", http_options=http_options(sim, retry_options=retry)) as c:
        assert generate(c).text == "finally"
    assert len(sim.requests) == 3


def test_stream_error_mid_stream(sim: GeminiSimulator, client: Client) -> None:
    sim.add(
        SimStreamError(after_chunks=2, status=503, reply=sim.text("x" * 64)),
        SimStreamError(status=500, message="stream failed"),
    )
    seen: list[str] = []
    with pytest.raises(errors.ServerError) as caught:
        collect(client, seen)
    assert seen == ["x" * 16, "x" * 16]
    assert (caught.value.code, caught.value.status) == (503, "UNAVAILABLE")
    with pytest.raises(errors.ServerError, match="stream failed"):
        generate(client)


async def test_cut_stream_raises_while_iterating_async(
    sim: GeminiSimulator, aclient: AsyncClient
) -> None:
    sim.add(SimCut(after_chunks=1, reply=sim.text("y" * 64)), SimCut())
    seen: list[str] = []
    chunks = await achunks_of(aclient)
    with pytest.raises(httpx2.RemoteProtocolError):
        await acollect(chunks, seen)
    assert seen == ["y" * 16]
    with pytest.raises(httpx2.RemoteProtocolError):
        await agenerate(aclient)


def test_cut_stream_raises_sync(sim: GeminiSimulator, client: Client) -> None:
    sim.add(SimCut(after_chunks=0))
    with pytest.raises(httpx2.RemoteProtocolError):
        stream(client)


def test_malformed(sim: GeminiSimulator, client: Client) -> None:
    sim.add(SimMalformed(after_chunks=1, reply=sim.text("m" * 40)), SimMalformed())
    seen: list[str] = []
    with pytest.raises(errors.UnknownApiResponseError, match="Failed to parse response as JSON"):
        collect(client, seen)
    assert seen == ["m" * 16]
    with pytest.raises(json.JSONDecodeError):
        generate(client)


# --- the script -------------------------------------------------------------------------------


def test_callable_reply_sees_request(sim: GeminiSimulator, client: Client) -> None:
    seen: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> str:
        seen.append(body)
        return "you said " + body["contents"][-1]["parts"][0]["text"]

    sim.add(answer, lambda body: SimFault(status=503))
    assert generate(client, "ping").text == "you said ping"
    assert seen[0]["contents"] == [{"parts": [{"text": "ping"}], "role": "user"}]
    with pytest.raises(errors.ServerError):
        generate(client)


def test_callable_failures(sim: GeminiSimulator, client: Client) -> None:
    def broken(body: dict[str, Any]) -> str:
        raise KeyError("oops")

    def garbage(body: dict[str, Any]) -> Any:
        return 42

    sim.add(broken, garbage)
    with pytest.raises(errors.ServerError, match="KeyError") as caught:
        generate(client)
    assert caught.value.code == 500
    with pytest.raises(errors.ServerError, match="reply or a fault"):
        generate(client)
    assert isinstance(sim.errors[0], KeyError)
    assert isinstance(sim.errors[1], TypeError)


def test_exhausted_script(sim: GeminiSimulator, client: Client) -> None:
    with pytest.raises(errors.ServerError) as caught:
        generate(client)
    assert caught.value.code == 500
    assert caught.value.status == "INTERNAL"
    assert "script is exhausted" in str(caught.value.message)


def test_assert_consumed() -> None:
    with (
        pytest.raises(AssertionError, match="1 scripted replies"),
        simulator(assert_consumed=True) as s,
    ):
        s.add("never requested")


def test_fallback_reply() -> None:
    with (
        simulator(fallback="always this") as s,
        Client(api_key="t", http_options=http_options(s)) as c,
    ):
        assert generate(c, "a").text == "always this"
        assert generate(c, "b").text == "always this"


def test_module_main_serves_echo() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "dive.testing.gemini", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        with Client(api_key="t", http_options=types.HttpOptions(base_url=url)) as c:
            answer = generate(c, "hello there")
        assert answer.text == "echo: hello there"
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
