"""What Gemini replies, kept and sent back, through the official SDK against ``GeminiSimulator``.

Calls without ids get ids unique across turns, sessions and reloads (a 10-turn conversation of
id-less parallel calls, valid at every step, through an ``Agent`` on a SQLite session). Reply
parts dive used to drop are kept: code execution as server-tool blocks, images as image
blocks, grounding / citation metadata and parts dive does not model as unknown blocks. They
survive the message JSON codec, go back to Gemini unchanged (golden body) and are left out for
other providers.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import dive.testing.anthropic as anth
import dive.testing.openai as oai
from dive.agent import Agent
from dive.llm import ModelRequest, ModelResponse
from dive.messages import (
    ContentBlock,
    ImageBlock,
    Message,
    ServerToolCall,
    ServerToolResult,
    UnknownBlock,
    messages_from_json,
    messages_to_json,
    validate_complete_turns,
)
from dive.providers.anthropic import AnthropicModel
from dive.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from dive.sessions import SQLiteSessionStore
from dive.testing.gemini import (
    GeminiSimulator,
    function_call_part,
    reply,
    signature_bytes,
    text_part,
    thought_part,
)
from tests.test_gemini_golden import FAST, STREAMING, bodies, gemini, golden, running, send

Json = dict[str, Any]
PNG = "iVBORw0KGgpkaXZlLXRlc3QtaW1hZ2Uh"
CALL_ID = re.compile(r"call_[0-9a-f]{24}")


@pytest.fixture
async def sim() -> AsyncIterator[GeminiSimulator]:
    async with running() as s:
        yield s


def call_ids(history: list[Message] | tuple[Message, ...]) -> list[str]:
    return [c.id for m in history for c in m.tool_calls]


# --- call ids ------------------------------------------------------------------------------


@STREAMING
async def test_idless_calls_get_ids_unique_across_turns(
    sim: GeminiSimulator, streaming: bool, tmp_path: Path
) -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    store = SQLiteSessionStore(tmp_path / "ids.db")
    agent = Agent(model=gemini(sim, streaming=streaming), tools=[add], session=store.session("ids"))
    for n in range(2):
        sim.add(sim.function_call("add", {"a": n, "b": 1}), sim.text(f"It is {n + 1}."))
        result = await agent.run(f"{n} plus one")
        assert result.status == "completed", result.error
    history = await store.session("ids").messages()
    await store.close()
    validate_complete_turns(history)
    ids = call_ids(history)
    assert len(ids) == 2
    assert len(set(ids)) == 2, f"one history repeats a call id: {ids}"
    assert all(CALL_ID.fullmatch(i) for i in ids), ids


TURNS = 10


def sim_calls(*calls: tuple[str, Json]) -> Any:
    return reply(*(function_call_part(name, args) for name, args in calls))


def _turn_script(n: int) -> list[Any]:
    """Turn ``n``: two id-less parallel calls, then one more, then the answer."""
    return [
        sim_calls(("add", {"a": n, "b": 1}), ("echo", {"value": f"t{n}"})),
        sim_calls(("add", {"a": n, "b": 2})),
        f"Turn {n} done.",
    ]


@STREAMING
async def test_ten_turns_of_idless_calls_stay_valid_across_reloads(
    sim: GeminiSimulator, streaming: bool, tmp_path: Path
) -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def echo(value: str) -> str:
        """Echo a value."""
        return value

    path = tmp_path / "ten.db"
    store = SQLiteSessionStore(path)
    model = gemini(sim, streaming=streaming)
    ids: list[str] = []
    for n in range(TURNS):
        if n == TURNS // 2:  # reload: a new store on the same file, a new agent
            await store.close()
            store = SQLiteSessionStore(path)
        agent = Agent(model=model, tools=[add, echo], session=store.session("ten"))
        sim.add(*_turn_script(n))
        result = await agent.run(f"turn {n}")
        # The simulator pairs every function response with its call (by id) and checks the
        # replayed signatures: a 400 would end the turn incomplete.
        assert result.status == "completed", (n, result.error)
        assert result.output_text == f"Turn {n} done."
        history = await store.session("ten").messages()
        validate_complete_turns(history)
        ids = call_ids(history)
        assert len(ids) == 3 * (n + 1)
        assert len(set(ids)) == len(ids), f"turn {n}: a call id repeats: {ids}"
        assert all(CALL_ID.fullmatch(i) for i in ids), ids
    await store.close()

    last = bodies(sim)[-1]["contents"]
    wire_calls = [p["functionCall"]["id"] for c in last for p in c["parts"] if "functionCall" in p]
    answers = [
        p["functionResponse"]["id"] for c in last for p in c["parts"] if "functionResponse" in p
    ]
    assert wire_calls == answers == ids
    assert len(bodies(sim)) == 3 * TURNS


# --- reply parts ---------------------------------------------------------------------------

GROUNDING = {
    "webSearchQueries": ["dive agent library"],
    "groundingChunks": [{"web": {"uri": "https://example.com/dive", "title": "Dive"}}],
    "groundingSupports": [
        {"segment": {"endIndex": 9, "text": "Dive runs"}, "groundingChunkIndices": [0]}
    ],
}
CITATIONS = {
    "citationSources": [{"startIndex": 0, "endIndex": 9, "uri": "https://example.com/dive"}]
}
SERVER_CALL = {"id": "srv-1", "toolType": "GOOGLE_SEARCH_WEB", "args": {"q": "dive"}}


def rich_reply() -> Any:
    return reply(
        thought_part("Plot the numbers, then look the library up."),
        {"executableCode": {"id": "code-1", "language": "PYTHON", "code": "print(6 * 7)"}},
        {"codeExecutionResult": {"id": "code-1", "outcome": "OUTCOME_OK", "output": "42\n"}},
        {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
        {"inlineData": {"mimeType": "image/png", "data": PNG}},
        {"toolCall": SERVER_CALL},
        text_part("Dive runs agents. The answer is 42."),
        candidate_fields={"groundingMetadata": GROUNDING, "citationMetadata": CITATIONS},
    )


def kinds(content: tuple[ContentBlock, ...]) -> list[str]:
    return [b.block_type if isinstance(b, UnknownBlock) else b.type for b in content]


EXPECTED_KINDS = [
    "thinking",
    "server_tool_use",
    "server_tool_result",
    "server_tool_use",
    "server_tool_result",
    "image",
    "part",
    "text",
    "grounding_metadata",
    "citation_metadata",
]


@STREAMING
async def test_reply_parts_are_kept(sim: GeminiSimulator, streaming: bool) -> None:
    sim.add(rich_reply())
    response = await send(gemini(sim, streaming=streaming), ask(), streaming)
    content = response.content
    assert kinds(content) == EXPECTED_KINDS
    assert response.text == "Dive runs agents. The answer is 42."
    code, result, bare_code, bare_result = content[1:5]
    assert isinstance(code, ServerToolCall)
    assert (code.id, code.name, code.provider) == ("code-1", "code_execution", "google")
    assert dict(code.input) == {"id": "code-1", "language": "PYTHON", "code": "print(6 * 7)"}
    assert isinstance(result, ServerToolResult)
    assert (result.tool_use_id, result.result_type) == ("code-1", "code_execution_result")
    assert result.content == {"id": "code-1", "outcome": "OUTCOME_OK", "output": "42\n"}
    assert isinstance(bare_code, ServerToolCall)
    assert isinstance(bare_result, ServerToolResult)
    assert bare_result.tool_use_id == bare_code.id  # an id-less result answers the code before
    assert re.fullmatch(r"code_[0-9a-f]{24}", bare_code.id)
    image = content[5]
    assert isinstance(image, ImageBlock)
    assert image.source.type == "base64"
    assert (image.source.media_type, image.source.data) == ("image/png", PNG)
    part, _, grounding, citations = content[6:]
    assert isinstance(part, UnknownBlock)
    assert (part.provider, dict(part.data)) == ("google", {"tool_call": snake(SERVER_CALL)})
    assert isinstance(grounding, UnknownBlock)
    assert grounding.provider == "google"
    assert grounding.data["web_search_queries"] == ["dive agent library"]
    assert isinstance(citations, UnknownBlock)
    assert citations.data["citations"] == [
        {"start_index": 0, "end_index": 9, "uri": "https://example.com/dive"}
    ]


def snake(obj: Json) -> Json:
    """The SDK's spelling of a part's fields."""
    return {re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), k): v for k, v in obj.items()}


def ask(*history: Message) -> ModelRequest:
    return ModelRequest(messages=(*history, Message.user("Compute and look it up.")))


def assistant(response: ModelResponse) -> Message:
    return Message(
        role="assistant", content=response.content, provider_state=response.provider_state
    )


@STREAMING
async def test_reply_parts_round_trip_and_go_back_to_gemini(
    sim: GeminiSimulator, streaming: bool
) -> None:
    sim.add(rich_reply(), sim.text("Again: 42."))
    model = gemini(sim, "gemini-3-flash-preview", streaming=streaming)
    first = await send(model, ask(), streaming)
    history = (Message.user("Compute and look it up."), assistant(first))
    stored = messages_from_json(messages_to_json(history))
    assert stored == history
    assert kinds(stored[1].content) == EXPECTED_KINDS
    await send(model, ask(*stored), streaming)
    replayed = bodies(sim)[1]
    model_turn = replayed["contents"][1]
    assert model_turn["role"] == "model"
    # the id-less code block's id is dive's own: it never goes on the wire
    assert "id" not in model_turn["parts"][3]["executableCode"]
    golden("reply_parts", "replayed_to_gemini", replayed)


async def test_reply_parts_are_left_out_for_other_providers(sim: GeminiSimulator) -> None:
    sim.add(rich_reply())
    first = await send(gemini(sim), ask(), streaming=False)
    history = (Message.user("Compute and look it up."), assistant(first))
    with (
        anth.simulator(assert_consumed=True) as asim,
        oai.simulator(assert_consumed=True) as osim,
    ):
        asim.add(anth.text("Claude: 42."))
        osim.add(oai.text("Responses: 42."), oai.text("Chat: 42."))
        models: list[Any] = [
            AnthropicModel("claude-sonnet-4-6", base_url=asim.url, api_key="test", retry=FAST),
            OpenAIResponsesModel("gpt-5", base_url=osim.url, api_key="test", retry=FAST),
            OpenAIChatModel("gpt-4.1", base_url=osim.url, api_key="test", retry=FAST),
        ]
        try:
            for model in models:
                answer = await model.generate(ask(*history))
                assert answer.text.endswith("42.")
        finally:
            for model in models:
                await model.aclose()
        sent = [json.dumps(r.body) for r in asim.message_requests] + [
            json.dumps(r.body) for r in osim.requests
        ]
    assert len(sent) == 3
    for body in sent:
        for leak in ("print(6 * 7)", "OUTCOME_OK", "dive agent library", "GOOGLE_SEARCH_WEB"):
            assert leak not in body
        assert "Dive runs agents. The answer is 42." in body


@STREAMING
async def test_a_signature_on_an_empty_closing_text_part_goes_back(
    sim: GeminiSimulator, streaming: bool
) -> None:
    """Gemini may close a reply with an empty text part that only carries a signature."""
    sim.add(reply(text_part("Hello."), text_part("", "c2lnLWVuZA==")), sim.text("Hi again."))
    model = gemini(sim, streaming=streaming)
    first = await send(model, ask(), streaming)
    assert first.text == "Hello."
    await send(model, ask(Message.user("Compute and look it up."), assistant(first)), streaming)
    parts = bodies(sim)[1]["contents"][1]["parts"]
    signed = [p for p in parts if "thoughtSignature" in p]
    assert len(signed) == 1
    assert signature_bytes(signed[0]["thoughtSignature"]) == b"sig-end"
    # streamed, the empty piece joins the text block; whole, it stays its own part
    assert parts == (
        [{"text": "Hello.", "thoughtSignature": signed[0]["thoughtSignature"]}]
        if streaming
        else [{"text": "Hello."}, {"text": "", "thoughtSignature": signed[0]["thoughtSignature"]}]
    )
