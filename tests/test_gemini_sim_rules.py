"""The simulator's option rules (``dive.testing.gemini._config``) and candidate fields.

Thinking options checked against the model of the path, function calling config, safety
settings, media part shapes and multimodal function responses: each broken rule is a 400 in
Google's envelope, and the valid neighbour of each case passes. Bodies go out as raw JSON (the
spelling is the test's choice) and through the SDK (its own spelling).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from google.genai import errors, types
from google.genai.client import Client

from dive.testing.gemini import GeminiSimulator, simulator
from tests.test_gemini_simulator import raw_post

Json = dict[str, Any]
HI = [{"role": "user", "parts": [{"text": "hi"}]}]
DECLARED = [
    {
        "functionDeclarations": [
            {"name": "search", "parameters": {"type": "object"}},
            {"name": "fetch", "parameters": {"type": "object"}},
        ]
    }
]
PNG = "iVBORw0KGgpkaXZlLXRlc3QtaW1hZ2Uh"


@pytest.fixture
def sim() -> Iterator[GeminiSimulator]:
    with simulator() as s:
        s.fallback = "ok"
        yield s


def post(sim: GeminiSimulator, model: str, body: Json) -> tuple[int, str]:
    path = model if model.startswith("tunedModels/") else f"models/{model}"
    status, _, raw = raw_post(sim, f"/v1beta/{path}:generateContent", body)
    answer = json.loads(raw)
    return status, answer["error"]["message"] if status != 200 else ""


def thinking(config: Json) -> Json:
    return {"contents": HI, "generationConfig": {"thinkingConfig": config}}


THINKING: list[tuple[str, Json, str | None]] = [
    ("gemini-2.5-flash", {"thinkingBudget": 0}, None),
    ("gemini-2.5-flash", {"thinking_budget": -1, "include_thoughts": True}, None),
    ("gemini-2.5-flash", {"thinkingBudget": 30000}, "between 1 and 24576"),
    ("gemini-2.5-flash-lite", {"thinkingBudget": 100}, "between 512 and 24576"),
    ("gemini-2.5-pro", {"thinkingBudget": 128}, None),
    ("gemini-2.5-pro", {"thinkingBudget": 0}, "only works in thinking mode"),
    ("gemini-2.5-pro", {"thinkingLevel": "LOW"}, "Thinking level is not supported"),
    ("gemini-3-pro-preview", {"thinking_level": "HIGH"}, None),
    ("gemini-3-pro-preview", {"thinking_level": "MINIMAL"}, "MINIMAL is not supported"),
    ("gemini-3-pro-preview", {"thinkingBudget": 0}, "only works in thinking mode"),
    ("gemini-3-flash-preview", {"thinkingLevel": "MINIMAL"}, None),
    ("gemini-3-flash-preview", {"thinkingLevel": "LOW", "thinkingBudget": 10}, "only set one"),
    ("gemini-2.0-flash", {"thinkingBudget": 1024}, "Thinking is not enabled"),
    ("gemini-2.0-flash", {"thinkingBudget": 0}, None),
    ("tunedModels/my-model", {"thinkingLevel": "XHIGH"}, None),
]


@pytest.mark.parametrize(("model", "config", "error"), THINKING)
def test_thinking_rules(sim: GeminiSimulator, model: str, config: Json, error: str | None) -> None:
    status, message = post(sim, model, thinking(config))
    if error is None:
        assert status == 200, message
    else:
        assert status == 400
        assert error in message


def test_thinking_rules_read_the_sdk_spelling(sim: GeminiSimulator) -> None:
    with Client(api_key="test", http_options=types.HttpOptions(base_url=sim.url)) as client:
        config = types.GenerateContentConfig(
            thinking_config=types.ThinkingConfig(thinking_budget=0)
        )
        with pytest.raises(errors.ClientError, match="only works in thinking mode"):
            client.models.generate_content(model="gemini-2.5-pro", contents="hi", config=config)  # pyright: ignore[reportUnknownMemberType]
        client.models.generate_content(model="gemini-2.5-flash", contents="hi", config=config)  # pyright: ignore[reportUnknownMemberType]


def calling(config: Json) -> Json:
    return {"contents": HI, "tools": DECLARED, "toolConfig": {"functionCallingConfig": config}}


CALLING: list[tuple[Json, str | None]] = [
    ({"mode": "VALIDATED", "allowedFunctionNames": ["search", "fetch"]}, None),
    ({"mode": "ANY", "allowed_function_names": ["fetch"]}, None),
    ({"mode": "AUTO", "allowedFunctionNames": ["search"]}, "ANY or VALIDATED"),
    ({"mode": "ANY", "allowedFunctionNames": ["browse"]}, "`browse`, which is not the name"),
    ({"mode": "SOMETIMES"}, '"SOMETIMES"'),
]


@pytest.mark.parametrize(("config", "error"), CALLING)
def test_function_calling_rules(sim: GeminiSimulator, config: Json, error: str | None) -> None:
    status, message = post(sim, "gemini-2.5-flash", calling(config))
    if error is None:
        assert status == 200, message
    else:
        assert status == 400
        assert error in message


SAFETY: list[tuple[list[Json], str | None]] = [
    ([{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "OFF"}], None),
    ([{"category": "HARM_CATEGORY_RUDE", "threshold": "OFF"}], '"HARM_CATEGORY_RUDE"'),
    ([{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "SOME"}], '"SOME"'),
    (
        [
            {"category": "HARM_CATEGORY_HARASSMENT", "threshold": "OFF"},
            {"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"},
        ],
        "more than once",
    ),
]


@pytest.mark.parametrize(("settings", "error"), SAFETY)
def test_safety_rules(sim: GeminiSimulator, settings: list[Json], error: str | None) -> None:
    status, message = post(sim, "gemini-2.5-flash", {"contents": HI, "safetySettings": settings})
    if error is None:
        assert status == 200, message
    else:
        assert status == 400
        assert error in message


def user(*parts: Json) -> Json:
    return {"contents": [{"role": "user", "parts": list(parts)}]}


def answered(response: Json) -> Json:
    call: Json = {"functionCall": {"name": "search", "args": {}, "id": "c1"}}
    return {
        "contents": [
            HI[0],
            {"role": "model", "parts": [call]},
            {"role": "user", "parts": [{"functionResponse": response}]},
        ]
    }


IMAGE_RESPONSE = {
    "name": "search",
    "id": "c1",
    "response": {"output": "a chart"},
    "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG}}],
}

MEDIA: list[tuple[str, Json, str | None]] = [
    ("gemini-2.5-flash", user({"inlineData": {"mime_type": "image/png", "data": PNG}}), None),
    ("gemini-2.5-flash", user({"inlineData": {"data": PNG}}), "inline_data.mime_type"),
    ("gemini-2.5-flash", user({"fileData": {"fileUri": "gs://b/cat.png"}}), None),
    ("gemini-2.5-flash", user({"fileData": {"mimeType": "image/png"}}), "file_data.file_uri"),
    ("gemini-3-pro-preview", answered(IMAGE_RESPONSE), None),
    ("gemini-2.5-flash", answered(IMAGE_RESPONSE), "Multimodal function responses"),
    (
        "gemini-3-pro-preview",
        answered({**IMAGE_RESPONSE, "parts": [{"text": "no"}]}),
        "function_response.parts[0].data",
    ),
]


@pytest.mark.parametrize(("model", "body", "error"), MEDIA)
def test_media_rules(sim: GeminiSimulator, model: str, body: Json, error: str | None) -> None:
    status, message = post(sim, model, body)
    if error is None:
        assert status == 200, message
    else:
        assert status == 400
        assert error in message


def test_candidate_fields_ride_on_the_final_candidate(sim: GeminiSimulator) -> None:
    grounding = {"webSearchQueries": ["dive agents"], "groundingChunks": []}
    for _ in range(2):
        sim.add(
            sim.text(
                "A long enough answer to stream.", candidate_fields={"groundingMetadata": grounding}
            )
        )
    status, _, raw = raw_post(
        sim, "/v1beta/models/gemini-2.5-flash:generateContent", user({"text": "q"})
    )
    assert status == 200
    assert json.loads(raw)["candidates"][0]["groundingMetadata"] == grounding
    status, _, raw = raw_post(
        sim, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", user({"text": "q"})
    )
    assert status == 200
    chunks = [json.loads(e[len("data: ") :]) for e in raw.decode().split("\r\n\r\n") if e]
    assert len(chunks) > 1
    assert [("groundingMetadata" in c["candidates"][0]) for c in chunks] == [False] * (
        len(chunks) - 1
    ) + [True]
