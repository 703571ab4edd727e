"""ResponseAccumulator and response_to_events (wire-apis.md §A6, messages.md §7 item 8)."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dive.errors import ProviderError, StreamInterruptedError
from dive.llm import (
    CitationsDelta,
    ContentBlockDelta,
    ContentBlockStart,
    ContentBlockStop,
    InputJSONDelta,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelResponse,
    Ping,
    ResponseAccumulator,
    SignatureDelta,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    Usage,
    parse_tool_arguments,
    response_to_events,
)
from dive.messages import (
    ContentBlock,
    JSONValue,
    ProviderState,
    RedactedThinkingBlock,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    UnknownBlock,
)
from dive.testing import text, tool_use

# --- helpers ---------------------------------------------------------------------------------


def feed(
    events: Iterable[StreamEvent], acc: ResponseAccumulator | None = None
) -> ResponseAccumulator:
    acc = acc if acc is not None else ResponseAccumulator()
    for event in events:
        acc.add(event)
    return acc


def start(index: int, block: ContentBlock) -> ContentBlockStart:
    return ContentBlockStart(index=index, block=block)


def text_delta(index: int, s: str) -> ContentBlockDelta:
    return ContentBlockDelta(index=index, delta=TextDelta(text=s))


def json_delta(index: int, s: str) -> ContentBlockDelta:
    return ContentBlockDelta(index=index, delta=InputJSONDelta(partial_json=s))


def thinking_delta(index: int, s: str) -> ContentBlockDelta:
    return ContentBlockDelta(index=index, delta=ThinkingDelta(thinking=s))


def signature_delta(index: int, s: str) -> ContentBlockDelta:
    return ContentBlockDelta(index=index, delta=SignatureDelta(signature=s))


def citation_delta(index: int, c: JSONValue) -> ContentBlockDelta:
    return ContentBlockDelta(index=index, delta=CitationsDelta(citation=c))


def stop(index: int) -> ContentBlockStop:
    return ContentBlockStop(index=index)


def end(stop_reason: str | None = "end_turn", usage: Usage | None = None) -> list[StreamEvent]:
    return [MessageDelta(stop_reason=stop_reason, usage=usage), MessageStop()]


def text_stream(*parts: str, index: int = 0) -> list[StreamEvent]:
    return [
        start(index, TextBlock(text="")),
        *(text_delta(index, p) for p in parts),
        stop(index),
    ]


def tool_stream(index: int, id: str, name: str, *parts: str) -> list[StreamEvent]:
    return [
        start(index, ToolCall(id=id, name=name)),
        *(json_delta(index, p) for p in parts),
        stop(index),
    ]


# --- text ------------------------------------------------------------------------------------


def test_text_deltas_concatenate() -> None:
    acc = feed([MessageStart(id="msg_1", model="m"), *text_stream("Hel", "lo", ", world"), *end()])
    r = acc.response()
    assert r.content == (TextBlock(text="Hello, world"),)
    assert r.text == "Hello, world"
    assert r.stop_reason == "end_turn"
    assert r.stop_kind == "finished"


def test_text_start_with_initial_text_is_kept() -> None:
    acc = feed([start(0, TextBlock(text="Hi")), text_delta(0, " there"), stop(0), *end()])
    assert acc.response().content == (TextBlock(text="Hi there"),)


def test_text_block_without_deltas() -> None:
    acc = feed([*text_stream(), *end()])
    assert acc.response().content == (TextBlock(text=""),)


def test_several_blocks_in_index_order() -> None:
    acc = feed(
        [
            MessageStart(),
            *text_stream("first", index=0),
            *tool_stream(1, "toolu_1", "get_weather", '{"city": "Paris"}'),
            *text_stream("second", index=2),
            *end("tool_use"),
        ]
    )
    r = acc.response()
    assert r.content == (
        TextBlock(text="first"),
        ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Paris"}),
        TextBlock(text="second"),
    )
    assert r.tool_calls == (
        ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Paris"}),
    )


def test_interleaved_deltas_go_to_their_blocks() -> None:
    acc = feed(
        [
            start(0, ToolCall(id="a", name="f")),
            start(1, ToolCall(id="b", name="g")),
            json_delta(1, '{"y":'),
            json_delta(0, '{"x":'),
            json_delta(0, " 1}"),
            json_delta(1, " 2}"),
            stop(1),
            stop(0),
            *end("tool_use"),
        ]
    )
    assert acc.response().content == (
        ToolCall(id="a", name="f", arguments={"x": 1}),
        ToolCall(id="b", name="g", arguments={"y": 2}),
    )


def test_pings_anywhere_are_ignored() -> None:
    acc = feed(
        [
            Ping(),
            MessageStart(id="msg_1"),
            Ping(),
            start(0, TextBlock(text="")),
            Ping(),
            text_delta(0, "a"),
            Ping(),
            stop(0),
            Ping(),
            MessageDelta(stop_reason="end_turn"),
            Ping(),
            MessageStop(),
        ]
    )
    r = acc.response()
    assert r.content == (TextBlock(text="a"),)
    assert r.id == "msg_1"


def test_delta_for_unknown_block_is_an_interruption() -> None:
    acc = ResponseAccumulator()
    with pytest.raises(StreamInterruptedError):
        acc.add(text_delta(3, "x"))


# --- tool calls ------------------------------------------------------------------------------


def test_tool_json_first_delta_empty_then_json() -> None:
    # The shape of the §A6 example.
    acc = feed(
        [
            MessageStart(id="msg_019Q", model="claude-sonnet-4-20250514"),
            start(0, ToolCall(id="toolu_01NR", name="get_weather")),
            Ping(),
            json_delta(0, ""),
            json_delta(0, '{"location": "Paris"}'),
            stop(0),
            *end("tool_use", Usage(input_tokens=377, output_tokens=65)),
        ]
    )
    r = acc.response()
    assert r.content == (
        ToolCall(id="toolu_01NR", name="get_weather", arguments={"location": "Paris"}),
    )
    (call,) = r.tool_calls
    assert dict(call.arguments) == {"location": "Paris"}
    assert call.raw_arguments is None
    assert r.stop_kind == "tool_use"


def test_tool_json_split_into_many_fragments() -> None:
    payload = {"query": "caf\u00e9 \u2603", "n": 3, "nested": {"list": [1, 2, None], "ok": True}}
    raw = json.dumps(payload)
    fragments = ["", *(raw[i : i + 3] for i in range(0, len(raw), 3))]
    acc = feed([*tool_stream(0, "t1", "search", *fragments), *end("tool_use")])
    (call,) = acc.response().tool_calls
    assert dict(call.arguments) == payload
    assert call.raw_arguments is None


def test_tool_without_deltas_has_empty_arguments() -> None:
    acc = feed([*tool_stream(0, "t1", "now"), *end("tool_use")])
    (call,) = acc.response().tool_calls
    assert dict(call.arguments) == {}
    assert call.raw_arguments is None


def test_tool_with_only_an_empty_delta_has_empty_arguments() -> None:
    acc = feed([*tool_stream(0, "t1", "now", ""), *end("tool_use")])
    (call,) = acc.response().tool_calls
    assert dict(call.arguments) == {}
    assert call.raw_arguments is None


@pytest.mark.parametrize(
    "parts",
    [
        ("", "[1, 2]"),
        ('"just a string"',),
        ("42",),
        ("null",),
        ("true",),
        ('{"location": ', '"Par'),
        ("{not json}",),
        ('{"a": 1}', "}"),
    ],
)
def test_tool_input_not_a_json_object(parts: tuple[str, ...]) -> None:
    acc = feed([*tool_stream(0, "t1", "f", *parts), *end("tool_use")])
    (call,) = acc.response().tool_calls
    assert dict(call.arguments) == {}
    assert call.raw_arguments == "".join(parts)
    assert call.id == "t1"
    assert call.name == "f"


def test_tool_start_keeps_signature_and_provider() -> None:
    acc = feed(
        [
            start(0, ToolCall(id="c1", name="f", signature="sig", provider="google")),
            json_delta(0, '{"a": 1}'),
            stop(0),
            *end("stop"),
        ]
    )
    assert acc.response().content == (
        ToolCall(id="c1", name="f", arguments={"a": 1}, signature="sig", provider="google"),
    )


PARSE_CASES: list[tuple[str, tuple[dict[str, JSONValue], str | None]]] = [
    ("", ({}, None)),
    ("   ", ({}, None)),
    ("{}", ({}, None)),
    ('{"a": [1, {"b": null}]}', ({"a": [1, {"b": None}]}, None)),
    (' {"a": 1} ', ({"a": 1}, None)),
    ("[1]", ({}, "[1]")),
    ("1", ({}, "1")),
    ('"s"', ({}, '"s"')),
    ("null", ({}, "null")),
    ('{"a": ', ({}, '{"a": ')),
    ("{'a': 1}", ({}, "{'a': 1}")),
]


@pytest.mark.parametrize(("raw", "expected"), PARSE_CASES)
def test_parse_tool_arguments(raw: str, expected: tuple[dict[str, JSONValue], str | None]) -> None:
    assert parse_tool_arguments(raw) == expected


# --- thinking --------------------------------------------------------------------------------


def test_thinking_deltas_and_signature() -> None:
    acc = feed(
        [
            start(0, ThinkingBlock(thinking="", signature="", provider="anthropic")),
            thinking_delta(0, "Let me "),
            thinking_delta(0, "think."),
            signature_delta(0, "EqQB-sig"),
            stop(0),
            *text_stream("Answer.", index=1),
            *end(),
        ]
    )
    assert acc.response().content == (
        ThinkingBlock(thinking="Let me think.", signature="EqQB-sig", provider="anthropic"),
        TextBlock(text="Answer."),
    )


def test_signature_delta_replaces_an_earlier_delta() -> None:
    acc = feed(
        [
            start(0, ThinkingBlock(thinking="", signature="")),
            thinking_delta(0, "x"),
            signature_delta(0, "first"),
            signature_delta(0, "second"),
            stop(0),
            *end(),
        ]
    )
    (block,) = acc.response().content
    assert isinstance(block, ThinkingBlock)
    assert block.signature == "second"


def test_signature_delta_replaces_the_start_signature() -> None:
    acc = feed(
        [
            start(0, ThinkingBlock(thinking="", signature="from-start")),
            signature_delta(0, "from-delta"),
            stop(0),
            *end(),
        ]
    )
    (block,) = acc.response().content
    assert isinstance(block, ThinkingBlock)
    assert block.signature == "from-delta"


def test_thinking_without_signature_delta_keeps_start_signature() -> None:
    acc = feed(
        [
            start(0, ThinkingBlock(thinking="", signature="kept")),
            thinking_delta(0, "t"),
            stop(0),
            *end(),
        ]
    )
    assert acc.response().content == (ThinkingBlock(thinking="t", signature="kept"),)


def test_omitted_thinking_is_signature_only() -> None:
    # display "omitted": start, one signature_delta, stop; the final thinking is "".
    acc = feed(
        [
            start(0, ThinkingBlock(thinking="", signature="", provider="anthropic")),
            signature_delta(0, "EqQB"),
            stop(0),
            *end(),
        ]
    )
    assert acc.response().content == (
        ThinkingBlock(thinking="", signature="EqQB", provider="anthropic"),
    )


def test_redacted_thinking_arrives_complete() -> None:
    block = RedactedThinkingBlock(data="opaque==", provider="anthropic")
    acc = feed([start(0, block), stop(0), *end()])
    assert acc.response().content == (block,)


# --- citations -------------------------------------------------------------------------------


def test_citations_deltas_accumulate() -> None:
    c1: JSONValue = {"type": "char_location", "cited_text": "a", "start_char_index": 0}
    c2: JSONValue = {"type": "web_search_result_location", "url": "https://example.com"}
    acc = feed(
        [
            start(0, TextBlock(text="")),
            citation_delta(0, c1),
            text_delta(0, "The sky "),
            citation_delta(0, c2),
            text_delta(0, "is blue."),
            stop(0),
            *end(),
        ]
    )
    (block,) = acc.response().content
    assert block == TextBlock(text="The sky is blue.", citations=(c1, c2))


def test_citations_append_to_start_citations() -> None:
    c0: JSONValue = {"type": "page_location", "start_page_number": 1}
    c1: JSONValue = {"type": "page_location", "start_page_number": 2}
    acc = feed(
        [start(0, TextBlock(text="x", citations=(c0,))), citation_delta(0, c1), stop(0), *end()]
    )
    (block,) = acc.response().content
    assert isinstance(block, TextBlock)
    assert block.citations == (c0, c1)
    assert block.text == "x"


def test_citation_only_text_block() -> None:
    c: JSONValue = {"type": "char_location"}
    acc = feed([start(0, TextBlock(text="")), citation_delta(0, c), stop(0), *end()])
    assert acc.response().content == (TextBlock(text="", citations=(c,)),)


# --- message-level fields --------------------------------------------------------------------


def test_message_delta_usage_replaces_earlier_usage() -> None:
    acc = feed(
        [
            MessageStart(id="m", usage=Usage(input_tokens=377, output_tokens=1)),
            *text_stream("hi"),
            MessageDelta(usage=Usage(input_tokens=377, output_tokens=30)),
            MessageDelta(stop_reason="end_turn", usage=Usage(input_tokens=377, output_tokens=65)),
            MessageStop(),
        ]
    )
    # Cumulative frames: the last one wins; nothing is summed.
    assert acc.response().usage == Usage(input_tokens=377, output_tokens=65)


def test_message_start_usage_alone_is_kept() -> None:
    u = Usage(input_tokens=10, output_tokens=1, cache_read_input_tokens=5)
    acc = feed([MessageStart(usage=u), *text_stream("x"), *end()])
    assert acc.response().usage == u
    assert acc.usage_known


def test_message_delta_without_usage_does_not_erase_it() -> None:
    u = Usage(input_tokens=3, output_tokens=4)
    acc = feed(
        [
            MessageStart(),
            *text_stream("x"),
            MessageDelta(usage=u),
            MessageDelta(stop_reason="end_turn"),
            MessageStop(),
        ]
    )
    r = acc.response()
    assert r.usage == u
    assert r.stop_reason == "end_turn"


def test_no_usage_frame_means_unknown_usage() -> None:
    acc = feed([MessageStart(), *text_stream("x"), *end()])
    assert not acc.usage_known
    assert acc.response().usage.known is False


def test_usage_known_turns_true_with_a_frame() -> None:
    acc = feed([MessageStart(), *text_stream("x")])
    assert not acc.usage_known
    acc.add(MessageDelta(usage=Usage(output_tokens=2)))
    assert acc.usage_known


def test_stop_reason_from_the_latest_delta_that_has_one() -> None:
    acc = feed(
        [
            *text_stream("x"),
            MessageDelta(stop_reason="max_tokens"),
            MessageDelta(stop_reason=None),
            MessageStop(),
        ]
    )
    r = acc.response()
    assert r.stop_reason == "max_tokens"
    assert r.stop_kind == "output_limit"


def test_stop_details_and_sequence() -> None:
    details: JSONValue = {"type": "refusal", "category": "cyber", "explanation": None}
    acc = feed(
        [
            *text_stream("x"),
            MessageDelta(stop_reason="refusal", stop_details=details, stop_sequence=None),
            MessageStop(),
        ]
    )
    r = acc.response()
    assert r.stop_details == details
    assert r.stop_kind == "refusal"
    acc2 = feed(
        [
            *text_stream("x"),
            MessageDelta(stop_reason="stop_sequence", stop_sequence="END"),
            MessageStop(),
        ]
    )
    assert acc2.response().stop_sequence == "END"


def test_provider_state_is_copied_to_the_response() -> None:
    state = ProviderState(
        provider="openai", api="responses", data=[{"type": "reasoning", "id": "rs_1"}]
    )
    acc = feed(
        [
            MessageStart(),
            *text_stream("x"),
            MessageDelta(stop_reason="stop", provider_state=state),
            MessageStop(),
        ]
    )
    r = acc.response()
    assert r.provider_state == state
    assert r.message().provider_state == state


def test_provider_state_not_erased_by_a_later_delta() -> None:
    state = ProviderState(provider="google", api="generate_content", data={"sig": "abc"})
    acc = feed(
        [
            *text_stream("x"),
            MessageDelta(provider_state=state),
            MessageDelta(stop_reason="stop"),
            MessageStop(),
        ]
    )
    assert acc.response().provider_state == state


def test_id_model_and_requested_model() -> None:
    acc = feed(
        [MessageStart(id="msg_1", model="claude-x-20250101"), *text_stream("x"), *end()],
        ResponseAccumulator("claude-x"),
    )
    r = acc.response()
    assert r.id == "msg_1"
    assert r.model == "claude-x-20250101"
    assert r.requested_model == "claude-x"


# --- progress flags --------------------------------------------------------------------------


def test_content_started_flips_at_first_block_start() -> None:
    acc = ResponseAccumulator()
    assert not acc.content_started
    acc.add(MessageStart(id="m", usage=Usage(input_tokens=1)))
    assert not acc.content_started
    acc.add(Ping())
    assert not acc.content_started
    acc.add(start(0, TextBlock(text="")))
    assert acc.content_started
    acc.add(text_delta(0, "x"))
    acc.add(stop(0))
    assert acc.content_started


def test_content_started_false_for_a_stream_without_blocks() -> None:
    acc = feed([MessageStart(), Ping(), MessageDelta(stop_reason="end_turn"), MessageStop()])
    assert not acc.content_started
    assert acc.complete
    assert acc.response().content == ()


def test_complete_only_at_message_stop() -> None:
    acc = feed([MessageStart(), *text_stream("x"), MessageDelta(stop_reason="end_turn")])
    assert not acc.complete
    acc.add(MessageStop())
    assert acc.complete


def test_response_without_message_stop_raises() -> None:
    acc = feed([MessageStart(), *text_stream("x"), MessageDelta(stop_reason="end_turn")])
    with pytest.raises(StreamInterruptedError):
        acc.response()


def test_response_of_an_empty_accumulator_raises() -> None:
    with pytest.raises(StreamInterruptedError) as info:
        ResponseAccumulator().response()
    assert isinstance(info.value, ProviderError)


# --- partial ---------------------------------------------------------------------------------


def test_partial_keeps_finished_blocks_and_partial_text() -> None:
    acc = feed(
        [
            MessageStart(),
            *text_stream("Done."),
            *tool_stream(1, "t1", "f", "", '{"a": 1}'),
            start(2, TextBlock(text="")),
            text_delta(2, "Half a sen"),
        ]
    )
    assert acc.partial() == (
        TextBlock(text="Done."),
        ToolCall(id="t1", name="f", arguments={"a": 1}),
        TextBlock(text="Half a sen"),
    )
    with pytest.raises(StreamInterruptedError):
        acc.response()


def test_partial_drops_empty_unfinished_text() -> None:
    acc = feed([*text_stream("kept"), start(1, TextBlock(text=""))])
    assert acc.partial() == (TextBlock(text="kept"),)


def test_partial_keeps_citations_of_unfinished_text() -> None:
    c: JSONValue = {"type": "char_location"}
    acc = feed([start(0, TextBlock(text="")), text_delta(0, "abc"), citation_delta(0, c)])
    assert acc.partial() == (TextBlock(text="abc", citations=(c,)),)


def test_partial_drops_half_written_tool_json() -> None:
    acc = feed(
        [
            *text_stream("Calling."),
            start(1, ToolCall(id="t1", name="f")),
            json_delta(1, ""),
            json_delta(1, '{"location": "Pa'),
        ]
    )
    assert acc.partial() == (TextBlock(text="Calling."),)


def test_partial_drops_tool_call_with_no_json_yet() -> None:
    acc = feed([*text_stream("Calling."), start(1, ToolCall(id="t1", name="f"))])
    assert acc.partial() == (TextBlock(text="Calling."),)


@pytest.mark.parametrize("parts", [("",), ("", "  ")])
def test_partial_drops_tool_call_cut_after_the_empty_first_delta(parts: tuple[str, ...]) -> None:
    acc = feed(
        [
            *text_stream("Calling."),
            start(1, ToolCall(id="t1", name="f")),
            *(json_delta(1, p) for p in parts),
        ]
    )
    assert acc.partial() == (TextBlock(text="Calling."),)


def test_partial_keeps_finished_tool_with_bad_json_as_raw() -> None:
    acc = feed([*tool_stream(0, "t1", "f", "[1, 2]")])
    assert acc.partial() == (ToolCall(id="t1", name="f", raw_arguments="[1, 2]"),)


def test_partial_drops_thinking_cut_before_signature() -> None:
    acc = feed(
        [
            start(0, ThinkingBlock(thinking="", signature="")),
            thinking_delta(0, "Hmm, let me"),
        ]
    )
    assert acc.partial() == ()


def test_partial_drops_thinking_cut_before_stop() -> None:
    acc = feed(
        [
            start(0, ThinkingBlock(thinking="", signature="")),
            thinking_delta(0, "Done thinking."),
            signature_delta(0, "sig"),
        ]
    )
    assert acc.partial() == ()


def test_partial_keeps_finished_thinking_before_cut_text() -> None:
    acc = feed(
        [
            start(0, ThinkingBlock(thinking="", signature="", provider="anthropic")),
            thinking_delta(0, "Reasoned."),
            signature_delta(0, "sig"),
            stop(0),
            start(1, TextBlock(text="")),
            text_delta(1, "The ans"),
        ]
    )
    assert acc.partial() == (
        ThinkingBlock(thinking="Reasoned.", signature="sig", provider="anthropic"),
        TextBlock(text="The ans"),
    )


def test_partial_drops_server_call_without_result() -> None:
    acc = feed(
        [
            *text_stream("Searching."),
            start(1, ServerToolCall(id="srv_1", name="web_search", provider="anthropic")),
            json_delta(1, '{"query": "dive"}'),
            stop(1),
        ]
    )
    assert acc.partial() == (TextBlock(text="Searching."),)


def test_partial_drops_unfinished_server_call() -> None:
    acc = feed(
        [
            start(0, ServerToolCall(id="srv_1", name="web_search")),
            json_delta(0, '{"query": "di'),
        ]
    )
    assert acc.partial() == ()


def test_partial_keeps_server_call_with_its_result() -> None:
    result = ServerToolResult(
        tool_use_id="srv_1",
        result_type="web_search_tool_result",
        content=[{"type": "web_search_result", "url": "https://example.com"}],
        provider="anthropic",
    )
    acc = feed(
        [
            start(0, ServerToolCall(id="srv_1", name="web_search", provider="anthropic")),
            json_delta(0, ""),
            json_delta(0, '{"query": "dive"}'),
            stop(0),
            start(1, result),
            stop(1),
            start(2, TextBlock(text="")),
            text_delta(2, "Found"),
        ]
    )
    assert acc.partial() == (
        ServerToolCall(
            id="srv_1", name="web_search", input={"query": "dive"}, provider="anthropic"
        ),
        result,
        TextBlock(text="Found"),
    )


def test_partial_pairs_server_calls_by_id() -> None:
    answered = ServerToolResult(tool_use_id="srv_1", result_type="web_search_tool_result")
    acc = feed(
        [
            start(0, ServerToolCall(id="srv_1", name="web_search")),
            stop(0),
            start(1, answered),
            stop(1),
            start(2, ServerToolCall(id="srv_2", name="web_search")),
            stop(2),
        ]
    )
    assert acc.partial() == (ServerToolCall(id="srv_1", name="web_search"), answered)


def test_partial_of_a_complete_stream_is_its_content() -> None:
    r = tool_use(("f", {"a": 1}), text="Calling.")
    acc = feed(response_to_events(r))
    assert acc.partial() == r.content


def test_partial_before_any_block_is_empty() -> None:
    acc = feed([MessageStart(), Ping()])
    assert acc.partial() == ()


# --- round trip ------------------------------------------------------------------------------

USAGE = Usage(
    input_tokens=472,
    output_tokens=89,
    cache_creation_input_tokens=10,
    cache_read_input_tokens=20,
    cache_creation_5m_input_tokens=10,
    cache_creation_1h_input_tokens=0,
    reasoning_tokens=30,
    service_tier="standard",
    requests=1,
)

ROUND_TRIP: list[ModelResponse] = [
    ModelResponse(content=(TextBlock(text="Hello."),), stop_reason="end_turn", usage=USAGE),
    ModelResponse(
        id="msg_01",
        model="claude-sonnet-4-5-20250929",
        content=(
            TextBlock(text="Checking."),
            ToolCall(id="toolu_1", name="get_weather", arguments={"location": "Paris"}),
            ToolCall(
                id="toolu_2",
                name="search",
                arguments={"q": "caf\u00e9 \u2603", "filters": {"n": [1, 2.5, None, True]}},
            ),
            ToolCall(id="toolu_3", name="now"),
        ),
        stop_reason="tool_use",
        usage=Usage(input_tokens=5, output_tokens=6),
    ),
    ModelResponse(
        content=(
            ThinkingBlock(thinking="Step 1. Step 2.", signature="EqQB==", provider="anthropic"),
            RedactedThinkingBlock(data="encrypted", provider="anthropic"),
            ThinkingBlock(thinking="", signature="omitted-sig", provider="anthropic"),
            ThinkingBlock(thinking="unsigned", provider="openai"),
            TextBlock(text="Answer."),
        ),
        stop_reason="end_turn",
        usage=USAGE,
    ),
    ModelResponse(
        content=(
            ServerToolCall(
                id="srvtoolu_1", name="web_search", input={"query": "x"}, provider="anthropic"
            ),
            ServerToolResult(
                tool_use_id="srvtoolu_1",
                result_type="web_search_tool_result",
                content=[{"type": "web_search_result", "url": "https://example.com"}],
                provider="anthropic",
            ),
            TextBlock(
                text="Cited.",
                citations=(
                    {"type": "web_search_result_location", "url": "https://example.com"},
                    {"type": "char_location", "start_char_index": 0},
                ),
            ),
            UnknownBlock(provider="anthropic", block_type="container_upload", data={"id": "c1"}),
        ),
        stop_reason="pause_turn",
        usage=USAGE.with_cost(0.01),
    ),
    ModelResponse(
        content=(
            TextBlock(text="Truncated "),
            ToolCall(id="t1", name="f", arguments={}, raw_arguments='{"a": [1, 2'),
            ToolCall(id="t2", name="g", arguments={}, raw_arguments="[1, 2]"),
        ),
        stop_reason="max_tokens",
        usage=Usage(output_tokens=100, known=False),
    ),
    ModelResponse(
        content=(
            ToolCall(id="c1", name="f", arguments={"a": 1}, signature="g-sig", provider="google"),
        ),
        stop_reason="STOP",
        usage=Usage(input_tokens=1, output_tokens=1),
        provider_state=ProviderState(provider="google", api="generate_content", data={"k": [1]}),
    ),
    ModelResponse(
        content=(),
        stop_reason="refusal",
        stop_details={"type": "refusal", "category": "cyber", "explanation": "no"},
        usage=Usage(input_tokens=3, output_tokens=1),
    ),
    ModelResponse(
        content=(TextBlock(text="x END"),),
        stop_reason="stop_sequence",
        stop_sequence="END",
        usage=Usage(input_tokens=3, output_tokens=2),
    ),
    ModelResponse(content=(TextBlock(text=""),), stop_reason=None),
    ModelResponse(),
    text("A scripted answer."),
    tool_use(("lookup", {"id": 7}), ("lookup", {"id": 8}), text="Two lookups."),
]


def _assert_same(got: ModelResponse, want: ModelResponse) -> None:
    assert got.content == want.content
    assert got.stop_reason == want.stop_reason
    assert got.stop_kind == want.stop_kind
    assert got.usage == want.usage
    assert got.stop_details == want.stop_details
    assert got.stop_sequence == want.stop_sequence
    assert got.provider_state == want.provider_state
    assert got.id == want.id
    assert got.model == want.model


@pytest.mark.parametrize("response", ROUND_TRIP)
def test_round_trip_through_events(response: ModelResponse) -> None:
    acc = feed(response_to_events(response))
    assert acc.complete
    _assert_same(acc.response(), response)


@pytest.mark.parametrize("response", ROUND_TRIP)
def test_events_have_the_stream_shape(response: ModelResponse) -> None:
    events = list(response_to_events(response))
    assert isinstance(events[0], MessageStart)
    assert isinstance(events[-2], MessageDelta)
    assert isinstance(events[-1], MessageStop)
    open_blocks: set[int] = set()
    started: list[int] = []
    for e in events[1:-2]:
        if isinstance(e, ContentBlockStart):
            assert e.index not in open_blocks
            open_blocks.add(e.index)
            started.append(e.index)
        elif isinstance(e, ContentBlockDelta):
            assert e.index in open_blocks
        else:
            assert isinstance(e, ContentBlockStop)
            open_blocks.remove(e.index)
    assert not open_blocks
    assert started == list(range(len(response.content)))


@pytest.mark.parametrize("response", ROUND_TRIP)
def test_round_trip_with_pings_interleaved(response: ModelResponse) -> None:
    events: list[StreamEvent] = []
    for e in response_to_events(response):
        events.extend([Ping(), e])
    _assert_same(feed(events).response(), response)


json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)
arguments = st.dictionaries(st.text(max_size=8), json_values, max_size=4)


@st.composite
def responses(draw: st.DrawFn) -> ModelResponse:
    blocks: list[ContentBlock] = []
    for i in range(draw(st.integers(min_value=0, max_value=4))):
        if draw(st.booleans()):
            blocks.append(TextBlock(text=draw(st.text(max_size=30))))
        else:
            blocks.append(ToolCall(id=f"t{i}", name="f", arguments=draw(arguments)))
    stop_reason = draw(st.sampled_from([None, "end_turn", "tool_use", "max_tokens", "weird"]))
    usage = Usage(
        input_tokens=draw(st.integers(min_value=0, max_value=10**6)),
        output_tokens=draw(st.integers(min_value=0, max_value=10**6)),
        known=draw(st.booleans()),
    )
    return ModelResponse(content=tuple(blocks), stop_reason=stop_reason, usage=usage)


@given(responses())
def test_round_trip_property(response: ModelResponse) -> None:
    _assert_same(feed(response_to_events(response)).response(), response)


# --- raw blocks dive does not model -------------------------------------------------------------


def test_fold_raw_delta_appends_strings_extends_lists_and_replaces_the_rest() -> None:
    from dive.llm import fold_raw_delta

    start = {"type": "compaction", "content": None, "notes": ["a"], "level": 1, "tag": "x"}
    once = fold_raw_delta(start, {"type": "compaction_delta", "content": "Sum", "notes": ["b"]})
    twice = fold_raw_delta(once, {"type": "compaction_delta", "content": "mary", "level": 2})
    assert twice == {
        "type": "compaction",
        "content": "Summary",
        "notes": ["a", "b"],
        "level": 2,
        "tag": "x",
    }
    # null changes nothing, the delta's type never overwrites the block's, inputs stay as given
    assert fold_raw_delta(twice, {"type": "x_delta", "tag": None}) == twice
    assert start["content"] is None
    assert once["content"] == "Sum"
