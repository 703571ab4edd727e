"""The message model by example: constructors, JSON shape, validation, tools (messages.md)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import cast

import pytest

from dive.errors import MessageValidationError, ToolDefinitionError
from dive.messages import (
    OBJECT_SCHEMA,
    Base64Source,
    CacheControl,
    DocumentBlock,
    FileSource,
    ImageBlock,
    Message,
    ProviderState,
    RedactedThinkingBlock,
    RiskLevel,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    TextSource,
    ThinkingBlock,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolRetryPolicy,
    UnknownBlock,
    UrlSource,
    messages_from_json,
    messages_to_json,
)
from dive.messages.codec import EMPTY

# --- constructors and derived fields ---------------------------------------------------------


def _assert_now(ts: datetime | None, before: datetime, after: datetime) -> None:
    assert ts is not None
    assert ts.utcoffset() == timedelta(0)
    assert before <= ts <= after


def test_user_constructor() -> None:
    before = datetime.now(UTC)
    m = Message.user("hello")
    after = datetime.now(UTC)
    assert m.role == "user"
    assert m.content == (TextBlock(text="hello"),)
    assert m.text == "hello"
    assert m.tool_calls == ()
    assert m.tool_result is None
    assert m.kind == "standard"
    assert m.visibility == "shared"
    _assert_now(m.created_at, before, after)


def test_system_constructor() -> None:
    before = datetime.now(UTC)
    m = Message.system("be brief")
    after = datetime.now(UTC)
    assert m.role == "system"
    assert m.text == "be brief"
    _assert_now(m.created_at, before, after)


def test_assistant_constructor_and_derived_fields() -> None:
    c1 = ToolCall(id="c1", name="search", arguments={"q": "x"})
    c2 = ToolCall(id="c2", name="fetch")
    before = datetime.now(UTC)
    m = Message.assistant(ThinkingBlock(thinking="plan", signature="s"), "Let me ", c1, "look.", c2)
    after = datetime.now(UTC)
    assert m.role == "assistant"
    assert m.text == "Let me look."
    assert m.tool_calls == (c1, c2)
    assert m.tool_result is None
    assert isinstance(m.content[1], TextBlock)
    _assert_now(m.created_at, before, after)


def test_tool_constructor() -> None:
    result = ToolResult(tool_call_id="c1", name="search", content=(TextBlock(text="found"),))
    before = datetime.now(UTC)
    m = Message.tool(result)
    after = datetime.now(UTC)
    assert m.role == "tool"
    assert m.content == (result,)
    assert m.tool_result == result
    assert m.tool_calls == ()
    assert m.name == "search"
    assert result.text == "found"
    _assert_now(m.created_at, before, after)


def test_constructor_keyword_overrides() -> None:
    m = Message.user("hi", visibility="private", id="m1", metadata={"k": "v"})
    assert m.visibility == "private"
    assert m.id == "m1"
    assert m.metadata == {"k": "v"}


def test_text_concatenates_only_text_blocks() -> None:
    m = Message(
        role="assistant",
        content=(
            TextBlock(text="a"),
            ThinkingBlock(thinking="ignored"),
            ImageBlock(source=UrlSource(url="https://x/y.png")),
            TextBlock(text="b"),
        ),
    )
    assert m.text == "ab"


def test_content_sequence_becomes_tuple() -> None:
    m = Message(role="user", content=[TextBlock(text="x")])  # pyright: ignore[reportArgumentType]
    assert m.content == (TextBlock(text="x"),)


def test_naive_and_offset_datetimes_are_stored_in_utc() -> None:
    naive = Message(role="user", created_at=datetime(2024, 5, 1, 12, 0))
    assert naive.created_at == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    offset = Message(
        role="user", created_at=datetime(2024, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    )
    assert offset.created_at is not None
    assert offset.created_at.utcoffset() == timedelta(0)
    assert offset.created_at == datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert offset.to_dict()["created_at"] == "2024-05-01T12:00:00Z"


# --- JSON shape --------------------------------------------------------------------------------


def test_defaults_are_omitted_and_type_is_always_present() -> None:
    assert Message(role="user").to_dict() == {"role": "user"}
    assert Message(role="user").to_json() == '{"role":"user"}'
    m = Message(
        role="assistant",
        content=(
            TextBlock(text="hi"),
            ToolCall(id="c", name="t"),
            ThinkingBlock(thinking="x"),
            ImageBlock(source=UrlSource(url="https://x/y.png")),
            DocumentBlock(source=TextSource(data="doc")),
        ),
    )
    assert m.to_dict() == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "hi"},
            {"type": "tool_use", "id": "c", "name": "t"},
            {"type": "thinking", "thinking": "x"},
            {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
            {"type": "document", "source": {"type": "text", "data": "doc"}},
        ],
    }
    assert Message.tool(ToolResult(tool_call_id="")).to_dict()["content"] == [
        {"type": "tool_result", "tool_call_id": ""}
    ]
    block = TextBlock(text="x", cache_control=CacheControl())
    assert Message(role="user", content=(block,)).to_dict()["content"] == [
        {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    ]


def test_non_default_fields_are_written() -> None:
    m = Message(
        role="user",
        kind="command_output",
        visibility="private",
        id="m1",
        name="alice",
        metadata={"k": "v"},
        provider_state=ProviderState(provider="openai", api="responses", data=[{"a": 1}]),
        created_at=datetime(2024, 1, 2, 3, 4, 5, 600000, tzinfo=UTC),
        content=(TextBlock(text="x", cache_control=CacheControl(ttl="1h")),),
    )
    assert m.to_dict() == {
        "role": "user",
        "content": [
            {"type": "text", "text": "x", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
        ],
        "kind": "command_output",
        "visibility": "private",
        "id": "m1",
        "name": "alice",
        "metadata": {"k": "v"},
        "provider_state": {"provider": "openai", "api": "responses", "data": [{"a": 1}]},
        "created_at": "2024-01-02T03:04:05.600000Z",
    }
    assert Message.from_json(m.to_json()) == m


def test_json_text_round_trips_exactly() -> None:
    text = (
        '{"role":"tool","content":[{"type":"tool_result","tool_call_id":"c1","name":"t",'
        '"content":[{"type":"text","text":"ok"}],"structured":{"n":[1,2.5,null]},'
        '"is_error":true}],"name":"t","created_at":"2024-01-01T00:00:00Z"}'
    )
    assert Message.from_json(text).to_json() == text


def test_history_round_trip() -> None:
    history = (
        Message.system("s"),
        Message.user("u"),
        Message.assistant(ToolCall(id="a", name="t", arguments={"x": [1, {"y": None}]})),
        Message.tool(ToolResult(tool_call_id="a", structured={"ok": True})),
    )
    assert messages_from_json(messages_to_json(history)) == history
    assert messages_from_json(json.loads(messages_to_json(history))) == history


# --- validation errors name the field path -------------------------------------------------


def test_tool_result_without_tool_call_id_from_json() -> None:
    with pytest.raises(MessageValidationError) as info:
        Message.from_json('{"role":"tool","content":[{"type":"tool_result","name":"t"}]}')
    assert isinstance(info.value, ValueError)
    assert "tool_call_id" in info.value.path
    assert info.value.path == "content[0].tool_call_id"
    assert "content[0].tool_call_id" in str(info.value)


def test_tool_result_without_tool_call_id_from_dict() -> None:
    with pytest.raises(MessageValidationError) as info:
        Message.from_dict({"role": "tool", "content": [{"type": "tool_result"}]})
    assert "tool_call_id" in info.value.path


def test_tool_result_tool_call_id_must_be_a_string() -> None:
    with pytest.raises(MessageValidationError) as info:
        ToolResult(tool_call_id=None)  # pyright: ignore[reportArgumentType]
    assert info.value.path == "tool_call_id"


def test_unknown_role() -> None:
    with pytest.raises(MessageValidationError) as info:
        Message.from_json('{"role":"robot"}')
    assert info.value.path == "role"
    with pytest.raises(MessageValidationError) as info:
        Message(role="robot")  # pyright: ignore[reportArgumentType]
    assert info.value.path == "role"


def test_unknown_kind_and_visibility() -> None:
    with pytest.raises(MessageValidationError) as info:
        Message.from_json('{"role":"user","kind":"weird"}')
    assert info.value.path == "kind"
    with pytest.raises(MessageValidationError) as info:
        Message(role="user", visibility="secret")  # pyright: ignore[reportArgumentType]
    assert info.value.path == "visibility"


def test_unknown_block_type() -> None:
    with pytest.raises(MessageValidationError) as info:
        Message.from_json('{"role":"user","content":[{"type":"text","text":"a"},{"type":"bogus"}]}')
    assert info.value.path.startswith("content[1]")


def test_wrong_value_type() -> None:
    with pytest.raises(MessageValidationError) as info:
        Message.from_json('{"role":"user","content":[{"type":"text","text":5}]}')
    assert info.value.path == "content[0].text"
    with pytest.raises(MessageValidationError) as info:
        Message.from_json(
            '{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"t",'
            '"arguments":[1,2]}]}'
        )
    assert info.value.path == "content[0].arguments"


def test_unknown_field_is_an_error_not_dropped() -> None:
    with pytest.raises(MessageValidationError) as info:
        Message.from_json('{"role":"user","content":[{"type":"text","text":"a","extra":1}]}')
    assert info.value.path == "content[0].extra"


def test_history_error_path_starts_with_message_index() -> None:
    good = Message.user("ok").to_dict()
    bad = {"role": "tool", "content": [{"type": "tool_result", "is_error": True}]}
    with pytest.raises(MessageValidationError) as info:
        messages_from_json(json.dumps([good, good, good, bad]))
    assert info.value.path.startswith("messages[3]")
    assert info.value.path == "messages[3].content[0].tool_call_id"
    with pytest.raises(MessageValidationError) as info:
        messages_from_json([good, good, good, {"role": "nobody"}])
    assert info.value.path.startswith("messages[3]")


def test_bad_image_media_type_path() -> None:
    good = Message.user("ok").to_dict()
    bad = {
        "role": "user",
        "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": ""}}
        ],
    }
    with pytest.raises(MessageValidationError) as info:
        messages_from_json([good, good, good, bad])
    assert info.value.path == "messages[3].content[0].source.media_type"
    with pytest.raises(MessageValidationError):
        ImageBlock(source=Base64Source(media_type="image/bmp", data=""))


def test_thinking_block_with_cache_control_is_an_error() -> None:
    with pytest.raises(MessageValidationError) as info:
        Message.from_json(
            '{"role":"assistant","content":[{"type":"thinking","thinking":"x",'
            '"cache_control":{"type":"ephemeral"}}]}'
        )
    assert info.value.path == "content[0].cache_control"
    with pytest.raises(MessageValidationError) as info:
        Message.from_json(
            '{"role":"assistant","content":[{"type":"redacted_thinking","data":"x",'
            '"cache_control":{"type":"ephemeral"}}]}'
        )
    assert info.value.path == "content[0].cache_control"
    with pytest.raises(TypeError):
        ThinkingBlock(thinking="x", cache_control=CacheControl())  # pyright: ignore[reportCallIssue]


def test_bad_cache_control_ttl() -> None:
    with pytest.raises(MessageValidationError):
        CacheControl(ttl="10m")  # pyright: ignore[reportArgumentType]
    with pytest.raises(MessageValidationError) as info:
        Message.from_json(
            '{"role":"user","content":[{"type":"text","text":"x",'
            '"cache_control":{"type":"ephemeral","ttl":"2h"}}]}'
        )
    assert info.value.path == "content[0].cache_control.ttl"


def test_cache_control_allowed_on_cacheable_blocks() -> None:
    cc = CacheControl(ttl="1h")
    blocks = (
        TextBlock(text="x", cache_control=cc),
        ImageBlock(source=FileSource(file_id="f"), cache_control=cc),
        DocumentBlock(source=UrlSource(url="https://x/d.pdf"), cache_control=cc),
        ToolCall(id="a", name="t", cache_control=cc),
        ServerToolCall(id="s", name="web_search", cache_control=cc),
        ServerToolResult(tool_use_id="s", result_type="web_search_tool_result", cache_control=cc),
    )
    m = Message(role="assistant", content=blocks)
    assert Message.from_json(m.to_json()) == m
    result = Message.tool(ToolResult(tool_call_id="a", cache_control=cc))
    assert Message.from_json(result.to_json()) == result


def test_non_block_content_rejected() -> None:
    with pytest.raises(MessageValidationError) as info:
        Message(role="user", content=("text",))  # pyright: ignore[reportArgumentType]
    assert info.value.path == "content[0]"
    with pytest.raises(MessageValidationError) as info:
        Message(role="user", content="text")  # pyright: ignore[reportArgumentType]
    assert info.value.path == "content"


def test_tool_result_content_is_text_image_or_document() -> None:
    with pytest.raises(MessageValidationError) as info:
        ToolResult(tool_call_id="a", content=(ThinkingBlock(thinking="x"),))  # pyright: ignore[reportArgumentType]
    assert info.value.path == "content[0]"


# --- tool result placement ---------------------------------------------------------------------


def test_tool_result_next_to_another_block_is_rejected() -> None:
    result = ToolResult(tool_call_id="a")
    with pytest.raises(MessageValidationError) as info:
        Message(role="tool", content=(result, TextBlock(text="also")))
    assert info.value.path == "content"
    with pytest.raises(MessageValidationError):
        Message(role="tool", content=(TextBlock(text="before"), result))
    with pytest.raises(MessageValidationError):
        Message.assistant(ToolCall(id="a", name="t"), result)


def test_two_tool_results_in_one_message_are_rejected() -> None:
    with pytest.raises(MessageValidationError) as info:
        Message(role="tool", content=(ToolResult(tool_call_id="a"), ToolResult(tool_call_id="b")))
    assert info.value.path == "content"


def test_tool_result_placement_checked_on_decode() -> None:
    with pytest.raises(MessageValidationError) as info:
        Message.from_json(
            '{"role":"tool","content":[{"type":"tool_result","tool_call_id":"a"},'
            '{"type":"text","text":"x"}]}'
        )
    assert info.value.path == "content"


def test_role_rules_are_not_enforced_at_construction() -> None:
    m = Message(role="user", content=(ToolCall(id="a", name="t"),))
    assert m.tool_calls
    m = Message(role="assistant", content=(ToolResult(tool_call_id="a"),))
    assert m.tool_result is not None


# --- unknown blocks -----------------------------------------------------------------------------


def test_unknown_block_kept_verbatim_through_json() -> None:
    raw: dict[str, object] = {
        "type": "mcp_tool_use",
        "id": "x1",
        "input": {"nested": [1, 2.5, None, True, {"deep": "value"}], "empty": {}},
        "unicode": "héllo ☃",
    }
    text = json.dumps(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "before"},
                {
                    "type": "unknown",
                    "provider": "anthropic",
                    "block_type": "mcp_tool_use",
                    "data": raw,
                },
                {"type": "text", "text": "after"},
            ],
        },
        separators=(",", ":"),
        ensure_ascii=False,
    )
    m = Message.from_json(text)
    assert len(m.content) == 3
    block = m.content[1]
    assert isinstance(block, UnknownBlock)
    assert block.provider == "anthropic"
    assert block.block_type == "mcp_tool_use"
    assert dict(block.data) == raw
    assert m.to_json() == text
    assert json.loads(m.to_json()) == json.loads(text)
    history = messages_from_json(messages_to_json([m, m]))
    assert history == (m, m)


# --- ToolDefinition --------------------------------------------------------------------------


def test_tool_definition_defaults() -> None:
    td = ToolDefinition(name="search")
    assert td.to_dict() == {"name": "search"}
    assert td.input_schema == OBJECT_SCHEMA
    assert td.origin == "local"
    assert td.metadata is EMPTY
    assert td.read_only is False
    assert ToolDefinition.from_dict({"name": "search"}) == td


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "dot.ted", "slash/", "ünïcode"])
def test_tool_definition_bad_name(name: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        ToolDefinition(name=name)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("name", ["a", "x" * 64, "get_weather-v2", "ABC123"])
def test_tool_definition_good_name(name: str) -> None:
    assert ToolDefinition(name=name).name == name


@pytest.mark.parametrize("timeout", [0, 0.0, -1.0, float("nan")])
def test_tool_definition_timeout_must_be_positive(timeout: float) -> None:
    with pytest.raises(ToolDefinitionError):
        ToolDefinition(name="t", timeout=timeout)


def test_tool_definition_positive_timeout() -> None:
    assert ToolDefinition(name="t", timeout=0.25).timeout == 0.25


def test_retry_policy_requires_idempotent_or_read_only() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        ToolDefinition(name="t", retry_policy=ToolRetryPolicy())
    assert str(info.value) == "retry_policy requires idempotent=True or effect_type='read_only'"
    with pytest.raises(ToolDefinitionError) as info:
        ToolDefinition(name="t", effect_type="write", retry_policy=ToolRetryPolicy(max_attempts=2))
    assert str(info.value) == "retry_policy requires idempotent=True or effect_type='read_only'"
    # Allowed: idempotent, read-only, or a single attempt.
    ToolDefinition(name="t", idempotent=True, retry_policy=ToolRetryPolicy())
    ToolDefinition(name="t", effect_type="read_only", retry_policy=ToolRetryPolicy())
    ToolDefinition(name="t", retry_policy=ToolRetryPolicy(max_attempts=1))


def test_retry_policy_rules() -> None:
    policy = ToolRetryPolicy()
    assert (policy.max_attempts, policy.backoff, policy.max_backoff) == (3, 0.5, 8.0)
    assert [policy.delay(k) for k in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    with pytest.raises(ToolDefinitionError):
        ToolRetryPolicy(max_attempts=0)


@pytest.mark.parametrize(
    ("effect", "read_only"),
    [("read_only", True), ("write", False), ("external_side_effect", False), (None, False)],
)
def test_read_only_property(effect: str | None, read_only: bool) -> None:
    td = ToolDefinition(name="t", effect_type=effect)  # pyright: ignore[reportArgumentType]
    assert td.read_only is read_only


def test_risk_none_compares_as_medium() -> None:
    levels: list[RiskLevel] = ["low", "medium", "high", "critical"]
    ranks = [ToolDefinition(name="t", risk_level=level).risk_rank for level in levels]
    assert ranks == sorted(ranks)
    assert len(set(ranks)) == 4
    unset = ToolDefinition(name="t").risk_rank
    assert unset == ToolDefinition(name="t", risk_level="medium").risk_rank
    assert ToolDefinition(name="t", risk_level="low").risk_rank < unset
    assert unset < ToolDefinition(name="t", risk_level="high").risk_rank


def test_tool_definition_collections_are_frozen() -> None:
    td = ToolDefinition(
        name="t",
        tags=["b", "a"],  # pyright: ignore[reportArgumentType]
        required_permissions={"fs.read"},  # pyright: ignore[reportArgumentType]
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
        metadata={"k": "v"},
    )
    assert td.tags == frozenset({"a", "b"})
    assert td.required_permissions == frozenset({"fs.read"})
    assert td.to_dict()["tags"] == ["a", "b"]
    with pytest.raises(TypeError):
        cast("dict[str, object]", td.input_schema)["x"] = 1
    with pytest.raises(TypeError):
        cast("dict[str, str]", td.metadata)["x"] = "y"


def test_tool_definition_json_round_trip() -> None:
    td = ToolDefinition(
        name="deploy",
        description="Deploy the app",
        input_schema={"type": "object", "properties": {"env": {"enum": ["prod", "dev"]}}},
        terminal=True,
        sequential_only=True,
        halts_batch=True,
        tags=frozenset({"ops"}),
        origin="mcp:infra",
        metadata={"owner": "sre"},
        cache_control=CacheControl(),
        required_permissions=frozenset({"deploy"}),
        requires_approval=True,
        risk_level="critical",
        effect_type="external_side_effect",
        idempotent=True,
        timeout=30.0,
        retry_policy=ToolRetryPolicy(max_attempts=2, backoff=1.0, max_backoff=4.0),
    )
    data = td.to_dict()
    assert ToolDefinition.from_dict(json.loads(json.dumps(data))) == td


# --- immutability --------------------------------------------------------------------------------


def test_message_is_frozen() -> None:
    m = Message.user("hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(m, "role", "assistant")  # noqa: B010
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(m.content[0], "text", "changed")  # noqa: B010
    assert not hasattr(m, "__dict__")  # slotted


def test_tool_definition_is_frozen() -> None:
    td = ToolDefinition(name="t")
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(td, "name", "u")  # noqa: B010


def test_metadata_is_read_only_and_copied() -> None:
    source = {"k": "v"}
    m = Message(role="user", metadata=source)
    source["k"] = "changed"
    assert m.metadata == {"k": "v"}
    with pytest.raises(TypeError):
        cast("dict[str, str]", m.metadata)["k"] = "x"


def test_arguments_are_read_only_and_copied() -> None:
    args: dict[str, object] = {"q": "x"}
    tc = ToolCall(id="a", name="t", arguments=cast("Mapping[str, str]", args))
    args["q"] = "changed"
    assert tc.arguments == {"q": "x"}
    with pytest.raises(TypeError):
        cast("dict[str, object]", tc.arguments)["q"] = "y"
    server = ServerToolCall(id="s", name="n", input={"a": 1})
    with pytest.raises(TypeError):
        cast("dict[str, object]", server.input)["a"] = 2
    unknown = UnknownBlock(provider="p", block_type="b", data={"a": 1})
    with pytest.raises(TypeError):
        cast("dict[str, object]", unknown.data)["a"] = 2


def test_decoded_mappings_are_read_only() -> None:
    m = Message.from_json(
        '{"role":"assistant","metadata":{"k":"v"},'
        '"content":[{"type":"tool_use","id":"a","name":"t","arguments":{"q":1}}]}'
    )
    with pytest.raises(TypeError):
        cast("dict[str, str]", m.metadata)["k"] = "x"
    with pytest.raises(TypeError):
        cast("dict[str, object]", m.tool_calls[0].arguments)["q"] = 2


def test_tool_call_arguments_must_be_an_object() -> None:
    with pytest.raises(MessageValidationError) as info:
        ToolCall(id="a", name="t", arguments=[1, 2])  # pyright: ignore[reportArgumentType]
    assert info.value.path == "arguments"


def test_with_returns_a_changed_copy() -> None:
    m = Message.user("hi")
    private = m.with_(visibility="private")
    assert private.visibility == "private"
    assert m.visibility == "shared"
    assert private.content == m.content


def test_redacted_and_server_blocks_round_trip() -> None:
    m = Message(
        role="assistant",
        content=(
            RedactedThinkingBlock(data="enc", provider="anthropic"),
            ServerToolCall(id="s1", name="web_search", input={"q": "x"}, provider="anthropic"),
            ServerToolResult(
                tool_use_id="s1",
                result_type="web_search_tool_result",
                content=[{"url": "https://x"}],
                provider="anthropic",
            ),
            DocumentBlock(
                source=Base64Source(media_type="application/pdf", data="JVBERi0="),
                title="t",
                context="c",
                citations=True,
            ),
        ),
    )
    assert Message.from_json(m.to_json()) == m
