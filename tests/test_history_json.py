"""``messages_to_json`` / ``messages_from_json``: one history with every block type, bad input."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from dive.errors import MessageValidationError
from dive.messages import (
    Base64Source,
    CacheControl,
    DocumentBlock,
    ImageBlock,
    Message,
    ProviderState,
    RedactedThinkingBlock,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    TextSource,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    UnknownBlock,
    UrlSource,
    messages_from_json,
    messages_to_json,
)

AT = datetime(2025, 1, 2, 3, 4, 5, 600000, tzinfo=UTC)

HISTORY = [
    Message(role="system", content=(TextBlock(text="Be brief."),), created_at=AT),
    Message(
        role="user",
        content=(
            TextBlock(text="What is in these?", cache_control=CacheControl(ttl="1h")),
            ImageBlock(source=Base64Source(media_type="image/png", data="iVBORw0KGgo=")),
            ImageBlock(source=UrlSource(url="https://example.com/cat.jpg")),
            DocumentBlock(source=TextSource(data="notes", media_type="text/plain"), title="n"),
        ),
        metadata={"source": "test"},
    ),
    Message(
        role="assistant",
        content=(
            ThinkingBlock(thinking="Look first.", signature="sig==", provider="anthropic"),
            RedactedThinkingBlock(data="opaque", provider="anthropic"),
            ServerToolCall(
                id="srv_1", name="web_search", input={"q": "cats"}, provider="anthropic"
            ),
            ServerToolResult(
                tool_use_id="srv_1",
                result_type="web_search_tool_result",
                content=[{"url": "https://example.com", "title": "Cats"}],
                provider="anthropic",
            ),
            UnknownBlock(provider="anthropic", block_type="future_block", data={"x": [1, 2.5]}),
            TextBlock(text="Let me count."),
            ToolCall(id="c1", name="count", arguments={"kind": "cat", "max": None}),
        ),
        provider_state=ProviderState(provider="openai", api="responses", data=[{"type": "x"}]),
        id="msg_1",
    ),
    Message(
        role="tool",
        name="count",
        content=(
            ToolResult(
                tool_call_id="c1",
                name="count",
                content=(TextBlock(text="2"),),
                structured={"count": 2},
            ),
        ),
    ),
    Message(
        role="tool",
        content=(ToolResult(tool_call_id="c2", is_error=True, content=(TextBlock(text="no"),)),),
        visibility="private",
    ),
    Message(role="assistant", content=(TextBlock(text="Two cats. ✓"),), kind="custom"),
]


def test_every_block_type_round_trips_exactly() -> None:
    text = messages_to_json(HISTORY)
    back = messages_from_json(text)
    assert list(back) == HISTORY
    assert messages_to_json(back) == text
    assert messages_from_json(text.encode()) == back
    types = {b["type"] for m in json.loads(text) for b in m.get("content", ())}
    assert types == {
        "text",
        "image",
        "document",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "server_tool_result",
        "unknown",
        "tool_use",
        "tool_result",
    }


def test_an_empty_history() -> None:
    assert messages_to_json([]) == "[]"
    assert messages_from_json("[]") == ()


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        ('[{"role":"user"', "messages", "Invalid JSON"),
        ('{"role":"user"}', "messages", "valid array"),
        ('[{"role":"user","content":"hi"}]', "messages[0].content", "valid array"),
        ('[{"role":"robot"}]', "messages[0].role", "role"),
        ('[{"role":"user","content":[{"type":"picture"}]}]', "messages[0].content[0]", "picture"),
        ('[{"role":"user","colour":"red"}]', "messages[0].colour", "unknown field"),
    ],
)
def test_invalid_input_names_the_place(text: str, path: str, message: str) -> None:
    with pytest.raises(MessageValidationError, match=message) as info:
        messages_from_json(text)
    assert info.value.path == path
