"""Golden request mapping for the Anthropic provider, and cache-marker placement properties."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dive.errors import UnsupportedSettingError
from dive.llm import ModelRequest, ModelSettings, ToolChoice
from dive.messages import (
    CacheControl,
    Message,
    RedactedThinkingBlock,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolDefinition,
    ToolResult,
    UnknownBlock,
)
from dive.providers.anthropic import build_request, capabilities_for, place_markers
from dive.providers.anthropic._cache import count_markers

MODEL = "claude-sonnet-4-5"


def tools(*names: str) -> tuple[ToolDefinition, ...]:
    return tuple(ToolDefinition(name=n, description=f"tool {n}") for n in names)


def req(messages: list[Message], **kw: Any) -> ModelRequest:
    return ModelRequest(messages=tuple(messages), **kw)


def test_text_system_tools_golden() -> None:
    out = build_request(
        req([Message.user("hi")], system="be brief", tools=tools("zeta", "alpha")), MODEL
    )
    assert out == {
        "model": MODEL,
        "max_tokens": 8192,
        "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}],
        "tools": [
            {
                "name": "alpha",
                "input_schema": {"type": "object", "properties": {}},
                "description": "tool alpha",
            },
            {
                "name": "zeta",
                "input_schema": {"type": "object", "properties": {}},
                "description": "tool zeta",
                "cache_control": {"type": "ephemeral"},
            },
        ],
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
            }
        ],
    }


def test_tool_results_regroup_into_one_user_message_results_first() -> None:
    a = ToolCall(id="t1", name="f", arguments={"x": 1})
    b = ToolCall(id="t2", name="f", arguments={})
    history = [
        Message.user("go"),
        Message.assistant("calling", a, b),
        Message.tool(ToolResult(tool_call_id="t1", content=(TextBlock(text="one"),))),
        Message.tool(
            ToolResult(tool_call_id="t2", content=(TextBlock(text="two"),), is_error=True)
        ),
        Message.user("and then?"),
    ]
    out = build_request(req(history, settings=ModelSettings(caching=False)), MODEL)
    assert out["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "calling"},
                {"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}},
                {"type": "tool_use", "id": "t2", "name": "f", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "one"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": [{"type": "text", "text": "two"}],
                    "is_error": True,
                },
                {"type": "text", "text": "and then?"},
            ],
        },
    ]


def test_encoder_backstop_answers_unanswered_calls_in_the_request_only() -> None:
    call = ToolCall(id="t9", name="f", arguments={})
    history = [Message.user("go"), Message.assistant(call)]
    out = build_request(req(history, settings=ModelSettings(caching=False)), MODEL)
    last = out["messages"][-1]
    assert last["role"] == "user"
    assert last["content"][0]["tool_use_id"] == "t9"
    assert last["content"][0]["is_error"] is True
    assert "Unknown result" in last["content"][0]["content"][0]["text"]
    assert len(history) == 2  # the history itself is untouched


def test_thinking_only_back_to_its_provider_and_only_signed() -> None:
    call = ToolCall(id="t1", name="f", arguments={})
    history = [
        Message.user("q"),
        Message.assistant(
            ThinkingBlock(thinking="mine", signature="sig1", provider="anthropic"),
            ThinkingBlock(thinking="unsigned", signature="", provider="anthropic"),
            ThinkingBlock(thinking="theirs", signature="x", provider="openai"),
            RedactedThinkingBlock(data="opaque", provider="anthropic"),
            call,
        ),
        Message.tool(ToolResult(tool_call_id="t1", content=(TextBlock(text="r"),))),
    ]
    s = ModelSettings(caching=False, thinking="enabled", reasoning_budget=2048, max_tokens=8000)
    out = build_request(req(history, settings=s), MODEL)
    assistant = out["messages"][1]["content"]
    assert assistant == [
        {"type": "thinking", "thinking": "mine", "signature": "sig1"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
    ]
    assert out["thinking"] == {"type": "enabled", "budget_tokens": 2048}


def test_thinking_omitted_when_the_tool_turn_came_from_another_provider(
    caplog: pytest.LogCaptureFixture,
) -> None:
    call = ToolCall(id="t1", name="f", arguments={})
    history = [
        Message.user("q"),
        Message.assistant(call),
        Message.tool(ToolResult(tool_call_id="t1", content=(TextBlock(text="r"),))),
    ]
    s = ModelSettings(caching=False, thinking="enabled", reasoning_budget=2048)
    with caplog.at_level(logging.WARNING):
        out = build_request(req(history, settings=s), MODEL)
    assert "thinking" not in out
    assert any("thinking omitted" in r.message for r in caplog.records)


def test_server_tools_and_unknown_blocks_only_to_their_provider() -> None:
    content = (
        TextBlock(text="searching"),
        ServerToolCall(id="s1", name="web_search", input={"query": "x"}, provider="anthropic"),
        ServerToolResult(
            tool_use_id="s1", result_type="web_search_tool_result", content=[], provider="anthropic"
        ),
        ServerToolCall(id="s2", name="web_search", input={}, provider="anthropic"),  # unpaired
        UnknownBlock(provider="anthropic", block_type="fancy", data={"type": "fancy", "v": 1}),
        UnknownBlock(provider="openai", block_type="other", data={"type": "other"}),
    )
    history = [Message.user("q"), Message(role="assistant", content=content), Message.user("next")]
    out = build_request(req(history, settings=ModelSettings(caching=False)), MODEL)
    assert [b["type"] for b in out["messages"][1]["content"]] == [
        "text",
        "server_tool_use",
        "web_search_tool_result",
        "fancy",
    ]


def test_tool_choice_and_parallel() -> None:
    s = ModelSettings(
        caching=False, tool_choice=ToolChoice(type="tool", name="f"), parallel_tool_calls=False
    )
    out = build_request(req([Message.user("q")], tools=tools("f"), settings=s), MODEL)
    assert out["tool_choice"] == {"type": "tool", "name": "f", "disable_parallel_tool_use": True}
    s2 = ModelSettings(caching=False, tool_choice=ToolChoice(type="none"))
    out2 = build_request(req([Message.user("q")], tools=tools("f"), settings=s2), MODEL)
    assert out2["tool_choice"] == {"type": "none"}


def test_forced_tool_choice_with_thinking_is_refused_before_any_request() -> None:
    s = ModelSettings(thinking="enabled", reasoning_budget=2048, tool_choice=ToolChoice(type="any"))
    with pytest.raises(UnsupportedSettingError, match="forced tool choice"):
        build_request(req([Message.user("q")], tools=tools("f"), settings=s), MODEL)


def test_sampling_parameters_per_family(caplog: pytest.LogCaptureFixture) -> None:
    s = ModelSettings(caching=False, temperature=0.2, top_k=5, top_p=0.5)
    plain = build_request(req([Message.user("q")], settings=s), MODEL)
    assert (plain["temperature"], plain["top_k"], plain["top_p"]) == (0.2, 5, 0.5)
    thinking = build_request(
        req(
            [Message.user("q")],
            settings=s.merge(ModelSettings(thinking="enabled", reasoning_budget=2000)),
        ),
        MODEL,
    )
    assert "temperature" not in thinking
    assert "top_k" not in thinking
    assert thinking["top_p"] == 0.95
    with caplog.at_level(logging.WARNING):
        adaptive = build_request(req([Message.user("q")], settings=s), "claude-opus-4-7")
    assert "temperature" not in adaptive


def test_adaptive_only_models_and_effort_clamping() -> None:
    s = ModelSettings(
        caching=False, thinking="enabled", reasoning_budget=3000, reasoning_effort="max"
    )
    seen: list[str] = []
    out = build_request(req([Message.user("q")], settings=s), "claude-opus-4-7", warn=seen.append)
    assert out["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert out["output_config"] == {"effort": "max"}
    assert seen == ["mapping thinking_budget to adaptive thinking"]
    older = build_request(req([Message.user("q")], settings=s), "claude-sonnet-4-5")
    assert "output_config" not in older  # no effort setting on that family
    xhigh = s.merge(ModelSettings(reasoning_effort="xhigh"))
    clamped = build_request(req([Message.user("q")], settings=xhigh), "claude-opus-4-6@2026")
    assert clamped["output_config"] == {"effort": "high"}


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("claude-opus-4-5-20251101", "claude-4.5+"),
        ("claude-sonnet-4-6@20260101", "claude-4.5+"),
        ("claude-opus-4-1", "claude-4"),
        ("claude-haiku-4-5-20251001", "claude-4"),
        ("claude-3-5-haiku-latest", "claude-3"),
        ("claude-instant-1.2", "claude-3"),
        ("claude-opus-4-9", "unknown"),  # a prefix of a known family is not that family
    ],
)
def test_families_are_matched_on_the_whole_family(name: str, family: str) -> None:
    assert capabilities_for(name).family == family


def test_unknown_model_works_with_a_warning() -> None:
    assert not capabilities_for("claude-nextgen-test-7").known
    seen: list[str] = []
    out = build_request(
        req([Message.user("q")], settings=ModelSettings(caching=False)),
        "claude-nextgen-test-7",
        warn=seen.append,
    )
    assert out["model"] == "claude-nextgen-test-7"
    assert out["max_tokens"] > 0
    assert seen == ["unknown model 'claude-nextgen-test-7': using conservative capabilities"]


def test_stop_metadata_tier_headers() -> None:
    s = ModelSettings(
        caching=False,
        stop_sequences=("END",),
        metadata={"user_id": "u1"},
        service_tier="standard_only",
        request_headers={"anthropic-beta": "x"},
    )
    out = build_request(req([Message.user("q")], settings=s), MODEL)
    assert out["stop_sequences"] == ["END"]
    assert out["metadata"] == {"user_id": "u1"}
    assert out["service_tier"] == "standard_only"
    assert out["extra_headers"] == {"anthropic-beta": "x"}


def test_caching_disabled_places_nothing_but_keeps_caller_markers() -> None:
    m = Message(role="user", content=(TextBlock(text="a", cache_control=CacheControl()),))
    out = build_request(
        req([m], system="s", tools=tools("f"), settings=ModelSettings(caching=False)), MODEL
    )
    assert count_markers(out.get("tools", []), out.get("system", []), out["messages"]) == 1


def test_steady_state_markers_and_1h_ttl() -> None:
    call = ToolCall(id="t1", name="f", arguments={})
    history = [
        Message.user("q"),
        Message.assistant(call),
        Message.tool(ToolResult(tool_call_id="t1", content=(TextBlock(text="r"),))),
    ]
    out = build_request(
        req(history, system="s", tools=tools("f", "g"), settings=ModelSettings(cache_ttl="1h")),
        MODEL,
    )
    marked = [
        b
        for b in [
            *out["tools"],
            *out["system"],
            *(c for m in out["messages"] for c in m["content"]),
        ]
        if "cache_control" in b
    ]
    assert len(marked) == 4
    assert all(b["cache_control"] == {"type": "ephemeral", "ttl": "1h"} for b in marked)
    assert out["tools"][-1]["name"] == "g"
    assert "cache_control" in out["tools"][-1]
    assert "cache_control" in out["messages"][0]["content"][0]  # previous request's newest
    assert "cache_control" in out["messages"][-1]["content"][-1]  # newest


Block = dict[str, Any]


@st.composite
def wire(draw: st.DrawFn) -> tuple[list[Block], list[Block], list[dict[str, Any]]]:
    def block(kind: str) -> Block:
        b: Block = (
            {"type": kind, "text": draw(st.sampled_from(["", "x"]))}
            if kind == "text"
            else {"type": kind}
        )
        if kind not in ("thinking", "redacted_thinking") and draw(st.integers(0, 6)) == 0:
            b["cache_control"] = {"type": "ephemeral"}
        return b

    tls = [block("tool") for _ in range(draw(st.integers(0, 3)))]
    system = [block("text") for _ in range(draw(st.integers(0, 1)))]
    messages: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 6))):
        kinds = draw(
            st.lists(
                st.sampled_from(["text", "image", "thinking", "tool_result"]),
                min_size=1,
                max_size=3,
            )
        )
        messages.append(
            {"role": "user" if i % 2 == 0 else "assistant", "content": [block(k) for k in kinds]}
        )
    return tls, system, messages


@given(wire(), st.sampled_from(["5m", "1h"]))
def test_cache_placement_properties(
    case: tuple[list[Block], list[Block], list[dict[str, Any]]], ttl: str
) -> None:
    tls, system, messages = case
    before = [
        id(b)
        for b in [*tls, *system, *(c for m in messages for c in m["content"])]
        if "cache_control" in b
    ]
    callers = len(before)
    total = place_markers(tls, system, messages, ttl=ttl)
    order = [*tls, *system, *(c for m in messages for c in m["content"])]
    marked = [b for b in order if "cache_control" in b]
    assert len(marked) == total
    assert total <= max(4, callers)  # dive never adds past 4; caller markers are never removed
    assert all(id(b) in {id(x) for x in marked} for b in order if id(b) in before)
    assert not any(b["type"] in ("thinking", "redacted_thinking") for b in marked)
    assert not any(b["type"] == "text" and not b.get("text") for b in marked if id(b) not in before)
    seen_5m = False
    for b in marked:  # a 1h marker never follows a 5m one
        t = b["cache_control"].get("ttl", "5m")
        assert not (seen_5m and t == "1h")
        seen_5m = seen_5m or t == "5m"


# --- whitespace-only text (issue 12) -----------------------------------------------------------


def test_whitespace_only_text_is_never_sent_anywhere() -> None:
    call = ToolCall(id="toolu_1", name="f", arguments={})
    messages = [
        Message.system("  \n"),
        Message.user("q"),
        Message.assistant(" ", call, "\n\n"),
        Message.tool(ToolResult(tool_call_id="toolu_1", content=(TextBlock(text=" \t"),))),
        Message.assistant("\n\n"),
        Message.user("again"),
    ]
    out = build_request(
        req(messages, system=" ", tools=tools("f"), settings=ModelSettings(caching=False)), MODEL
    )
    assert "system" not in out
    assert out["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1"},
                {"type": "text", "text": "again"},
            ],
        },
    ]


def test_build_request_hands_settings_warnings_to_warn() -> None:
    seen: list[str] = []
    s = ModelSettings(caching=False, temperature=0.2, thinking="enabled", reasoning_budget=2000)
    build_request(req([Message.user("q")], settings=s), MODEL, warn=seen.append)
    assert seen == ["temperature must be 1 with thinking; dropped"]


def test_media_in_an_assistant_turn_goes_as_a_note() -> None:
    from dive.messages import Base64Source, ImageBlock

    image = ImageBlock(source=Base64Source(media_type="image/png", data="iVBORw0KGgo="))
    out = build_request(
        req(
            [
                Message.user("draw a cat"),
                Message(role="assistant", content=(TextBlock(text="Here it is."), image)),
                Message.user("thanks"),
            ]
        ),
        MODEL,
    )
    assistant = out["messages"][1]
    assert assistant["role"] == "assistant"
    types = [b["type"] for b in assistant["content"]]
    assert types == ["text", "text"]  # no image block in an assistant turn
    assert "image produced by another model" in assistant["content"][1]["text"]
    # in a user turn the same image is sent as an image
    user = build_request(req([Message(role="user", content=(image,))]), MODEL)["messages"][0]
    assert [b["type"] for b in user["content"]] == ["image"]
