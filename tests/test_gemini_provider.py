"""The Gemini provider end to end: ``GeminiModel`` through the real ``google-genai`` SDK against
``GeminiSimulator`` (wire-apis.md Part F; messages.md §7 item 7; turns.md §4).

Every test drives real HTTP: dive builds the request, the SDK sends it, the simulator validates
it (function call / response pairing, thought signatures it issued) and answers from its script;
the request bodies it recorded are the golden evidence.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

import dive.testing.anthropic as anth
import dive.testing.openai as oai
from dive.agent import Agent, MessageEvent, RunResult
from dive.errors import InvalidRequestError, StreamInterruptedError
from dive.llm import ModelSettings, Usage
from dive.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    validate_complete_turns,
)
from dive.providers._retry import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.providers.google import GeminiModel
from dive.providers.openai import OpenAIResponsesModel
from dive.sessions import MemorySessionStore
from dive.testing.gemini import (
    GeminiSimulator,
    ScriptItem,
    SimCut,
    SimFault,
    SimStreamError,
    function_call_part,
    reply,
    signature_bytes,
    simulator,
    text,
    text_part,
    thought_part,
)
from dive.turns import NOT_RUN_TEXT
from tests._events import Events

Json = dict[str, Any]

MODEL = "gemini-2.5-flash"
FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
ANSWER = "Hello from Gemini."
LONG = "Hello there, this answer is long enough to arrive in several text chunks."
CHUNK = 16  # the simulator's characters per streamed text chunk
THOUGHT = "Plan: add one and two, then report the sum."

STREAMING = pytest.mark.parametrize("streaming", [True, False], ids=["stream", "json"])

_OPEN: list[GeminiModel | AnthropicModel | OpenAIResponsesModel] = []


# --- helpers ----------------------------------------------------------------------------------


@pytest.fixture
async def sim() -> AsyncIterator[GeminiSimulator]:
    """A simulator whose script must be used up; the models made against it are closed after."""
    with simulator(assert_consumed=True) as s:
        try:
            yield s
        finally:
            while _OPEN:
                await _OPEN.pop().aclose()


def make_model(
    sim: GeminiSimulator, *, streaming: bool = True, retry: RetryPolicy = FAST
) -> GeminiModel:
    model = GeminiModel(MODEL, base_url=sim.url, api_key="test", retry=retry, streaming=streaming)
    _OPEN.append(model)
    return model


def bodies(sim: GeminiSimulator) -> list[Json]:
    return [r.body for r in sim.generate_requests]


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


def parts_of(content: Json) -> list[Json]:
    return list(content["parts"])


def function_calls_in(content: Json) -> list[Json]:
    return [p["functionCall"] for p in parts_of(content) if "functionCall" in p]


def function_responses_in(content: Json) -> list[Json]:
    return [p["functionResponse"] for p in parts_of(content) if "functionResponse" in p]


def schema_of(declaration: Json) -> Json:
    """The parameters schema of a declaration (the SDK sends ``parameters_json_schema``)."""
    for key in ("parametersJsonSchema", "parameters_json_schema", "parameters"):
        if key in declaration:
            return dict(declaration[key])
    raise AssertionError(f"no parameters schema in {declaration!r}")


def camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(w.title() for w in rest)


def same_signature(a: str | None, b: str | None) -> bool:
    """Signatures compared by decoded bytes (the SDK re-encodes them URL-safe)."""
    return a is not None and b is not None and signature_bytes(a) == signature_bytes(b)


# --- 1. the tool loop ------------------------------------------------------------------------


@STREAMING
async def test_tool_loop(sim: GeminiSimulator, streaming: bool) -> None:
    calls = Calls()
    sim.add(
        sim.function_calls(("add", {"a": 1, "b": 2}), ("echo", {"value": "x"}), text="Computing."),
        sim.function_call("add", {"a": 3, "b": 4}),
        sim.text("The answer is 7."),
    )
    agent = Agent(
        model=make_model(sim, streaming=streaming), tools=calls.tools(), instructions="Be brief."
    )
    result = await agent.run("compute")

    assert result.status == "completed", result.error
    assert result.error is None
    assert result.outcome is None
    assert result.output_text == "The answer is 7."
    assert result.stop_reason == "STOP"
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
    assert all(u.known and u.output_tokens > 0 and u.input_tokens > 0 for u in per_call)
    assert result.usage.requests == 3
    assert result.usage.output_tokens == sum(u.output_tokens for u in per_call)

    recorded = sim.generate_requests
    assert len(recorded) == 3
    assert all(r.stream is streaming for r in recorded)
    assert all(r.model == MODEL for r in recorded)
    sent = bodies(sim)
    for body in sent:
        system = body["systemInstruction"]
        assert "".join(p["text"] for p in system["parts"]) == agent.system_prompt()
        assert agent.system_prompt().startswith("Be brief.")
        (tool,) = body["tools"]
        declarations = tool["functionDeclarations"]
        assert [d["name"] for d in declarations] == ["add", "echo"]
        assert declarations[0]["description"] == "Add two numbers."
        assert schema_of(declarations[0])["type"] == "object"
        assert schema_of(declarations[0])["required"] == ["a", "b"]
        # The system prompt is never a content turn.
        assert all(c["role"] in ("user", "model") for c in body["contents"])

    assert sent[0]["contents"] == [{"role": "user", "parts": [{"text": "compute"}]}]
    history_calls = calls_of(result.turn.messages)
    second = sent[1]["contents"]
    assert [c["role"] for c in second] == ["user", "model", "user"]
    model_turn = second[1]
    assert parts_of(model_turn)[0] == {"text": "Computing."}
    wire_calls = function_calls_in(model_turn)
    assert [(c["name"], c["args"]) for c in wire_calls] == [
        ("add", {"a": 1, "b": 2}),
        ("echo", {"value": "x"}),
    ]
    assert [c.get("id") for c in wire_calls] == [c.id for c in history_calls[:2]]
    # The tool results: functionResponse parts of ONE user turn, in call order.
    answers = second[2]
    assert answers["role"] == "user"
    assert all("functionResponse" in p for p in parts_of(answers))
    responses = function_responses_in(answers)
    assert [(r["name"], r.get("id")) for r in responses] == [
        ("add", history_calls[0].id),
        ("echo", history_calls[1].id),
    ]
    assert [r["response"] for r in responses] == [{"output": 3}, {"output": "x"}]

    third = sent[2]["contents"]
    assert third[:3] == second  # the conversation is resent unchanged, then grows
    assert [c["role"] for c in third[3:]] == ["model", "user"]
    assert [c["args"] for c in function_calls_in(third[3])] == [{"a": 3, "b": 4}]
    assert [r["response"] for r in function_responses_in(third[4])] == [{"output": 7}]


# --- 2. parallel calls -----------------------------------------------------------------------


@pytest.mark.parametrize("with_ids", [True, False], ids=["ids", "no-ids"])
@STREAMING
async def test_parallel_calls_answered_in_call_order(
    sim: GeminiSimulator, with_ids: bool, streaming: bool
) -> None:
    finished: list[str] = []
    second_done = asyncio.Event()

    async def first(tag: str) -> str:
        """Finishes only after ``second``."""
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

    scripted_ids = ["fc-a", "fc-b", "fc-c"] if with_ids else [None, None, None]
    sim.add(
        sim.function_calls(
            *(
                function_call_part(name, {"tag": tag}, id=call_id)
                for name, tag, call_id in zip(
                    ("first", "second", "third"), "abc", scripted_ids, strict=True
                )
            )
        ),
        sim.text("All done."),
    )
    agent = Agent(
        model=make_model(sim, streaming=streaming),
        tools=[first, second, third],
        parallel_tool_execution=True,
    )
    result = await agent.run("go")

    assert result.status == "completed", result.error
    assert finished[-1] == "first"  # ran concurrently and finished out of order
    validate_complete_turns(result.turn.messages)
    history_calls = calls_of(result.turn.messages)
    ids = [c.id for c in history_calls]
    if with_ids:
        assert ids == ["fc-a", "fc-b", "fc-c"]
    else:  # fresh random ids, never per-response counters that repeat across turns
        assert len(set(ids)) == 3
        assert all(re.fullmatch(r"call_[0-9a-f]{24}", i) for i in ids), ids
    # Of parallel calls only the first carries a signature.
    assert [c.signature is not None for c in history_calls] == [True, False, False]
    assert [c.provider for c in history_calls] == ["google", None, None]

    contents = bodies(sim)[1]["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    wire_calls = function_calls_in(contents[1])
    assert [c["name"] for c in wire_calls] == ["first", "second", "third"]
    assert [c.get("id") for c in wire_calls] == ids
    responses = function_responses_in(contents[2])
    assert [r["name"] for r in responses] == ["first", "second", "third"]
    assert [r.get("id") for r in responses] == ids
    assert [r["response"] for r in responses] == [
        {"output": "first:a"},
        {"output": "second:b"},
        {"output": "third:c"},
    ]


# --- 3. thought signatures ---------------------------------------------------------------------


@STREAMING
async def test_thought_signatures_round_trip(sim: GeminiSimulator, streaming: bool) -> None:
    calls = Calls()
    sim.add(
        sim.function_call("add", {"a": 1, "b": 2}, thought=THOUGHT, text="Adding."),
        sim.function_calls(("add", {"a": 3, "b": 4}), ("echo", {"value": "y"})),
        sim.text("Done.", thought="Everything is summed."),
    )
    agent = Agent(
        model=make_model(sim, streaming=streaming),
        tools=calls.tools(),
        model_settings=ModelSettings(thinking="enabled", reasoning_budget=1024),
    )
    result = await agent.run("add things")

    # The simulator checks every replayed signature: a missing or corrupted one is a 400.
    assert result.status == "completed", result.error
    assert result.output_text == "Done."
    assert calls.log == ["add(1,2)", "add(3,4)", "echo(y)"]
    validate_complete_turns(result.turn.messages)

    history_calls = calls_of(result.turn.messages)
    assert [c.provider for c in history_calls] == ["google", "google", None]
    first_sig, second_sig = history_calls[0].signature, history_calls[1].signature
    assert first_sig is not None
    assert second_sig is not None
    assert history_calls[2].signature is None
    assert sim.issued_signature(first_sig)
    assert sim.issued_signature(second_sig)
    assert not same_signature(first_sig, second_sig)

    thinking = [b for m in result.turn.messages for b in m.content if isinstance(b, ThinkingBlock)]
    assert [(b.provider, b.thinking) for b in thinking] == [
        ("google", THOUGHT),
        ("google", "Everything is summed."),
    ]

    sent = bodies(sim)
    assert len(sent) == 3
    for body in sent:
        # The SDK sends the inner keys in snake_case (proto3 JSON accepts either spelling).
        thinking_config = {
            camel(k): v for k, v in body["generationConfig"]["thinkingConfig"].items()
        }
        assert thinking_config == {"includeThoughts": True, "thinkingBudget": 1024}
    model_turn = sent[1]["contents"][1]
    assert model_turn["role"] == "model"
    parts = parts_of(model_turn)
    assert parts[0] == {"text": THOUGHT, "thought": True}  # the thought goes back, unsigned
    assert parts[1] == {"text": "Adding."}
    # The signature goes back on the same (function call) part, unchanged in bytes.
    assert "functionCall" in parts[2]
    assert same_signature(parts[2]["thoughtSignature"], first_sig)

    later = sent[2]["contents"]
    assert later[:3] == sent[1]["contents"]
    call_parts = [p for p in parts_of(later[3]) if "functionCall" in p]
    assert len(call_parts) == 2
    assert same_signature(call_parts[0]["thoughtSignature"], second_sig)
    assert "thoughtSignature" not in call_parts[1]
    assert not sim.errors


TEXT_SIGNATURE_BUG = (
    "bug: dive/providers/google/_mapping.py build_contents()/_part_of() never replays the "
    "signatures kept in provider_state (signatures on text parts): Part F says a "
    "thoughtSignature on any model part goes back on the same part, unchanged; expected the "
    "text part to carry it, actual: no thoughtSignature. Fix: when the message's provider_state "
    "is google/generate_content, put its signatures back on the matching parts"
)


@STREAMING
async def test_signature_on_a_text_part_goes_back_on_that_part(
    sim: GeminiSimulator, streaming: bool
) -> None:
    sim.add(
        reply(thought_part("Hmm.", unsigned=True), text_part("Hi there.", "c2lnLXRleHQ=")),
        sim.text("Again."),
    )
    session = MemorySessionStore().session("text-signature")
    agent = Agent(
        model=make_model(sim, streaming=streaming),
        session=session,
        model_settings=ModelSettings(thinking="enabled"),
    )
    first = await agent.run("hello")
    assert first.status == "completed", first.error
    (thinking,) = [
        b for m in first.turn.messages for b in m.content if isinstance(b, ThinkingBlock)
    ]
    assert (thinking.provider, thinking.thinking) == ("google", "Hmm.")
    state = first.turn.messages[-1].provider_state
    assert state is not None
    assert (state.provider, state.api) == ("google", "generate_content")
    second = await agent.run("again")
    assert second.status == "completed", second.error
    model_turn = bodies(sim)[1]["contents"][1]
    assert model_turn["role"] == "model"
    (text_sent,) = [p for p in parts_of(model_turn) if not p.get("thought")]
    assert same_signature(text_sent.get("thoughtSignature"), "c2lnLXRleHQ=")


# --- 4. finish reasons -----------------------------------------------------------------------

REFUSALS = ["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII"]

FINISH_CASES: list[Any] = [
    *(
        pytest.param(
            reply(finish_reason=reason), "completed", None, reason, False, id=reason.lower()
        )
        for reason in REFUSALS
    ),
    pytest.param(
        reply(function_call_part("add", {"a": 1, "b": 2}), finish_reason="SAFETY"),
        "completed",
        None,
        "SAFETY",
        True,
        id="safety-with-call",
    ),
    pytest.param(
        text("Partial ans", finish_reason="MAX_TOKENS"),
        "incomplete",
        "output_limit",
        "MAX_TOKENS",
        False,
        id="max-tokens",
    ),
    pytest.param(
        reply(function_call_part("add", {"a": 1}), finish_reason="MAX_TOKENS"),
        "incomplete",
        "output_limit",
        "MAX_TOKENS",
        True,
        id="max-tokens-with-call",
    ),
    pytest.param(
        reply(
            finish_reason="MALFORMED_FUNCTION_CALL",
            finish_message="Malformed function call: add(a=1,",
        ),
        "incomplete",
        "provider_stopped",
        "MALFORMED_FUNCTION_CALL",
        False,
        id="malformed-function-call",
    ),
    pytest.param(
        text("Some text anyway.", finish_reason="OTHER"),
        "completed",
        None,
        "OTHER",
        False,
        id="other-with-text",
    ),
]


@pytest.mark.parametrize(("scripted", "status", "reason", "stop_reason", "not_run"), FINISH_CASES)
@STREAMING
async def test_finish_reason_mapping(
    sim: GeminiSimulator,
    scripted: ScriptItem,
    status: str,
    reason: str | None,
    stop_reason: str,
    not_run: bool,
    streaming: bool,
) -> None:
    calls = Calls()
    sim.add(scripted)
    result = await Agent(model=make_model(sim, streaming=streaming), tools=calls.tools()).run("go")

    assert result.status == status, result.error
    assert result.stop_reason == stop_reason
    assert result.error is None
    assert calls.log == []  # a limited, filtered or malformed response's calls never run
    validate_complete_turns(result.turn.messages)
    if reason is None:
        assert result.outcome is None
        assert not ends_with_outcome_note(result.turn.messages)
    else:
        assert result.outcome is not None
        assert result.outcome.reason == reason
        assert result.outcome.next == "continue"
        assert ends_with_outcome_note(result.turn.messages)
    answered = tool_results(result.turn.messages)
    if not_run:
        assert [result_text(r) for r in answered] == [NOT_RUN_TEXT]
        assert all(r.is_error for r in answered)
    else:
        assert answered == []
    if stop_reason == "OTHER":
        assert result.output_text == "Some text anyway."
    assert len(sim.requests) == 1


@STREAMING
async def test_stop_with_calls_runs_them(sim: GeminiSimulator, streaming: bool) -> None:
    calls = Calls()
    sim.add(sim.function_call("add", {"a": 2, "b": 2}), sim.text("Four."))
    result = await Agent(model=make_model(sim, streaming=streaming), tools=calls.tools()).run("go")
    assert result.status == "completed", result.error
    assert calls.log == ["add(2,2)"]
    assert result.output_text == "Four."
    assert len(sim.requests) == 2


@pytest.mark.parametrize("block_reason", ["SAFETY", "PROHIBITED_CONTENT"])
@STREAMING
async def test_blocked_prompt_is_a_refusal(
    sim: GeminiSimulator, block_reason: str, streaming: bool
) -> None:
    calls = Calls()
    sim.add(sim.blocked(block_reason, "The prompt was blocked."))
    result = await Agent(model=make_model(sim, streaming=streaming), tools=calls.tools()).run(
        "something bad"
    )
    assert result.status == "completed", result.error
    assert result.stop_reason == block_reason
    assert result.error is None
    assert result.outcome is None
    assert calls.log == []
    assert result.output_text == ""
    validate_complete_turns(result.turn.messages)
    assert len(sim.requests) == 1
    (usage,) = message_usages(result)
    assert usage.known
    assert usage.input_tokens > 0
    assert usage.output_tokens == 0


# --- 5. usage --------------------------------------------------------------------------------


@STREAMING
async def test_usage_buckets(sim: GeminiSimulator, streaming: bool) -> None:
    sim.add(
        text(
            "Cached answer.",
            thought="Thinking it over.",
            usage={
                "promptTokenCount": 2000,
                "cachedContentTokenCount": 1536,
                "candidatesTokenCount": 300,
                "thoughtsTokenCount": 200,
            },
        )
    )
    result = await Agent(model=make_model(sim, streaming=streaming)).run("hi")
    assert result.status == "completed", result.error

    (per_call,) = message_usages(result)
    for u in (per_call, result.usage):
        assert u.known
        assert u.requests == 1
        assert u.input_tokens == 2000 - 1536  # prompt includes cached: taken out
        assert u.cache_read_input_tokens == 1536
        assert u.cache_creation_input_tokens == 0
        assert u.total_input_tokens == 2000
        assert u.output_tokens == 300 + 200  # thoughts are output, not in candidates
        assert u.reasoning_tokens == 200


@STREAMING
async def test_usage_without_cache_or_thoughts(sim: GeminiSimulator, streaming: bool) -> None:
    sim.add(text(ANSWER, usage={"promptTokenCount": 50, "candidatesTokenCount": 7}))
    result = await Agent(model=make_model(sim, streaming=streaming)).run("hi")
    assert result.status == "completed", result.error
    (u,) = message_usages(result)
    assert u.known
    assert u.input_tokens == 50
    assert u.cache_read_input_tokens == 0
    assert u.output_tokens == 7
    assert u.reasoning_tokens in (None, 0)


# --- 6. faults ---------------------------------------------------------------------------------

RETRYABLE: list[Any] = [
    pytest.param(SimFault(status=429, retry_after=1), True, id="stream-429"),
    pytest.param(SimFault(status=429, retry_after=1), False, id="json-429"),
    pytest.param(SimFault(status=503), True, id="stream-503"),
    pytest.param(SimFault(status=503), False, id="json-503"),
    pytest.param(SimStreamError(after_chunks=0, status=503), True, id="stream-error-chunk-first"),
]


@pytest.mark.parametrize(("fault", "streaming"), RETRYABLE)
async def test_retryable_fault_is_retried_without_duplicated_text(
    sim: GeminiSimulator, fault: ScriptItem, streaming: bool
) -> None:
    sim.add(fault, text(LONG))
    events = Events()
    result = await Agent(model=make_model(sim, streaming=streaming)).run("hi", on_event=events)

    assert result.status == "completed", result.error
    assert result.error is None
    sent = bodies(sim)
    assert len(sent) == 2
    assert sent[0] == sent[1]  # the same request, resent
    assert result.output_text == LONG
    assert texts_of(result.turn.messages) == [LONG]
    validate_complete_turns(result.turn.messages)
    assert result.usage.requests == 1
    if streaming:
        assert events.streamed_text() == LONG
        assert events.message_starts() == 1


async def test_several_faults_in_a_row_then_success(sim: GeminiSimulator) -> None:
    sim.add(
        SimFault(status=429, retry_after=0.001),
        SimFault(status=503),
        SimStreamError(after_chunks=0, status=503),
        text(ANSWER),
    )
    result = await Agent(model=make_model(sim)).run("hi")
    assert result.status == "completed", result.error
    assert len(sim.requests) == 4
    assert texts_of(result.turn.messages) == [ANSWER]


CUT_BUG = (
    "bug: dive/providers/google/_model.py translate() maps the SDK's httpx2.RemoteProtocolError "
    "(a dropped connection, not named '*Transport*') to a non-retryable StreamInterruptedError "
    "instead of a retryable ProviderConnectionError; use _retry.transport_errors() as the "
    "Anthropic and OpenAI providers do"
)


@STREAMING
async def test_cut_before_content_is_retried(sim: GeminiSimulator, streaming: bool) -> None:
    sim.add(SimCut(after_chunks=0))
    sim.fallback = LONG  # the retry's answer (not scripted: a missed retry leaves no debt)
    events = Events()
    result = await Agent(model=make_model(sim, streaming=streaming)).run("hi", on_event=events)

    assert result.status == "completed", result.error
    assert len(sim.requests) == 2
    assert texts_of(result.turn.messages) == [LONG]
    if streaming:
        assert events.streamed_text() == LONG
        assert events.message_starts() == 1


@STREAMING
async def test_400_is_an_invalid_request_error(sim: GeminiSimulator, streaming: bool) -> None:
    sim.add(SimFault(status=400, message="Request contains an invalid argument."))
    result = await Agent(model=make_model(sim, streaming=streaming)).run("hi")

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    assert result.outcome.next == "continue"
    err = result.error
    assert isinstance(err, InvalidRequestError)
    assert err.status == 400
    assert err.provider == "google"
    assert err.error_type == "INVALID_ARGUMENT"
    assert not err.retryable
    assert len(sim.requests) == 1  # not retried
    validate_complete_turns(result.turn.messages)
    assert ends_with_outcome_note(result.turn.messages)


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(SimStreamError(after_chunks=2, status=503, reply=text(LONG)), id="error"),
        pytest.param(SimStreamError(after_chunks=2, status=429, reply=text(LONG)), id="429"),
        pytest.param(SimCut(after_chunks=2, reply=text(LONG)), id="cut"),
    ],
)
async def test_failure_after_content_is_stream_interrupted(
    sim: GeminiSimulator, fault: ScriptItem
) -> None:
    sim.add(fault)
    events = Events()
    result = await Agent(model=make_model(sim)).run("hi", on_event=events)

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "stream_interrupted"
    assert result.outcome.next == "continue"
    assert isinstance(result.error, StreamInterruptedError)
    assert len(sim.requests) == 1  # not retried: text had reached the consumer
    partial = LONG[: CHUNK * 2]
    assert events.streamed_text() == partial
    assert texts_of(result.turn.messages) == [partial]  # the partial text is kept
    validate_complete_turns(result.turn.messages)
    assert ends_with_outcome_note(result.turn.messages)


# --- 7. one session across providers -----------------------------------------------------------

ANTHROPIC_MODEL = "claude-sonnet-4-6"
ANTHROPIC_THOUGHT = "I should add one and two first, then check the result carefully."
OPENAI_THOUGHT = "The user wants three plus four."
GEMINI_THOUGHT = "Five plus six: call the add tool."


async def test_one_session_across_anthropic_responses_and_gemini(sim: GeminiSimulator) -> None:
    """Anthropic → Responses → Gemini → Anthropic → Responses in one session.

    The Gemini simulator keeps ``check_signatures=True``: it only demands signatures on calls it
    served itself, so the foreign (Anthropic, OpenAI) calls replayed without one are valid, while
    its own call must come back with its signature on the following Gemini requests.
    """
    calls = Calls()
    with (
        anth.simulator(assert_consumed=True) as asim,
        oai.simulator(assert_consumed=True) as osim,
    ):
        asim.add(
            anth.reply(
                blocks=[
                    anth.thinking_block(ANTHROPIC_THOUGHT),
                    anth.text_block("Adding."),
                    anth.tool_use_block("add", {"a": 1, "b": 2}),
                ]
            ),
            anth.text("It is 3."),
            anth.text("Summary done."),
        )
        osim.add(
            oai.reply(
                reasoning=[oai.reasoning(OPENAI_THOUGHT)],
                tool_calls=[oai.call("add", {"a": 3, "b": 4})],
            ),
            oai.text("It is 7."),
            oai.text("All five answers are done."),
        )
        sim.add(
            sim.function_call("add", {"a": 5, "b": 6}, thought=GEMINI_THOUGHT, text="Adding."),
            sim.text("It is 11."),
        )
        claude = AnthropicModel(ANTHROPIC_MODEL, base_url=asim.url, api_key="test", retry=FAST)
        _OPEN.append(claude)
        responses = OpenAIResponsesModel("gpt-5", base_url=osim.url, api_key="test", retry=FAST)
        _OPEN.append(responses)
        gemini = make_model(sim)
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
            (gemini, "five plus six"),
            (claude, "summarize"),
            (responses, "and again"),
        ):
            agent.model = model
            result = await agent.run(prompt)
            # Every simulator validates what it receives: a 400 would end the turn incomplete.
            assert result.status == "completed", (type(model).__name__, result.error)
            outputs.append(result.output_text)
        assert outputs == [
            "It is 3.",
            "It is 7.",
            "It is 11.",
            "Summary done.",
            "All five answers are done.",
        ]
        assert calls.log == ["add(1,2)", "add(3,4)", "add(5,6)"]

        history = await session.messages()
        validate_complete_turns(history)
        thinking = [b for m in history for b in m.content if isinstance(b, ThinkingBlock)]
        assert [(b.provider, b.thinking) for b in thinking] == [
            ("anthropic", ANTHROPIC_THOUGHT),
            ("openai", OPENAI_THOUGHT),
            ("google", GEMINI_THOUGHT),
        ]
        anthropic_signature = thinking[0].signature
        gemini_call = [c for c in calls_of(history) if c.provider == "google"]
        assert len(gemini_call) == 1
        gemini_signature = gemini_call[0].signature
        assert gemini_signature is not None
        assert sim.issued_signature(gemini_signature)
        assert [c.signature is None for c in calls_of(history)] == [True, True, False]

        def leaks_gemini(body: Json) -> bool:
            dumped = json.dumps(body)
            return gemini_signature in dumped or signature_bytes(gemini_signature).hex() in dumped

        # Gemini: only its own thought and signature; foreign calls without signatures.
        g_sent = bodies(sim)
        assert len(g_sent) == 2
        for body in g_sent:
            g_text = json.dumps(body)
            assert ANTHROPIC_THOUGHT not in g_text
            assert anthropic_signature not in g_text
            assert OPENAI_THOUGHT not in g_text
            assert "encrypted_content" not in g_text
            assert "encryptedContent" not in g_text
            for content in body["contents"]:
                assert content["role"] in ("user", "model")
                for part in parts_of(content):
                    assert part.get("thought") is not True or part["text"] == GEMINI_THOUGHT
        first = g_sent[0]["contents"]
        foreign_calls = [p for c in first for p in parts_of(c) if "functionCall" in p]
        assert [p["functionCall"]["args"] for p in foreign_calls] == [
            {"a": 1, "b": 2},
            {"a": 3, "b": 4},
        ]
        assert all("thoughtSignature" not in p for c in first for p in parts_of(c))
        own = [
            p
            for c in g_sent[1]["contents"]
            for p in parts_of(c)
            if "functionCall" in p and p["functionCall"]["args"] == {"a": 5, "b": 6}
        ]
        assert len(own) == 1
        assert same_signature(own[0]["thoughtSignature"], gemini_signature)
        signed = [p for c in g_sent[1]["contents"] for p in parts_of(c) if "thoughtSignature" in p]
        assert signed == own

        # Anthropic and OpenAI never see Gemini's thought or signature.
        a_sent = [r.body for r in asim.message_requests]
        o_sent = [r.body for r in osim.responses_requests]
        assert len(a_sent) == 3
        assert len(o_sent) == 3
        for body in [*a_sent, *o_sent]:
            assert GEMINI_THOUGHT not in json.dumps(body)
            assert not leaks_gemini(body)
        # Anthropic still gets its own thinking back, byte-identical.
        a_thinking = [
            b
            for m in a_sent[2]["messages"]
            if m["role"] == "assistant"
            for b in m["content"]
            if b["type"] in ("thinking", "redacted_thinking")
        ]
        assert a_thinking == [
            {"type": "thinking", "thinking": ANTHROPIC_THOUGHT, "signature": anthropic_signature}
        ]
        for body in o_sent:
            assert ANTHROPIC_THOUGHT not in json.dumps(body)
        assert not sim.errors


def test_client_timeouts_are_retryable_timeout_errors() -> None:
    import httpx2

    from dive.errors import ProviderTimeoutError
    from dive.providers.google._model import translate

    for exc in (httpx2.ReadTimeout("slow"), TimeoutError("slow")):
        err = translate(exc)
        assert isinstance(err, ProviderTimeoutError), err
        assert err.retryable
