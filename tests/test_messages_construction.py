"""Building a message record with a field missing or unknown names the field, as decoding does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dive.errors import MessageFieldError, MessageValidationError
from dive.messages import (
    Base64Source,
    DocumentBlock,
    ImageBlock,
    Message,
    ProviderState,
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
from dive.messages.codec import decode

MISSING: list[tuple[Callable[..., Any], dict[str, Any], str]] = [
    (ToolResult, {}, "tool_call_id"),
    (ToolCall, {}, "id"),
    (ToolCall, {"id": "call_1"}, "name"),
    (Message, {}, "role"),
    (TextBlock, {}, "text"),
    (ImageBlock, {}, "source"),
    (DocumentBlock, {}, "source"),
    (Base64Source, {"data": "eA=="}, "media_type"),
    (ThinkingBlock, {"signature": "sig"}, "thinking"),
    (RedactedThinkingBlock, {}, "data"),
    (ServerToolCall, {"id": "s"}, "name"),
    (ServerToolResult, {"tool_use_id": "s"}, "result_type"),
    (UnknownBlock, {"provider": "p"}, "block_type"),
    (ProviderState, {}, "provider"),
    (ToolDefinition, {}, "name"),
]


@pytest.mark.parametrize(("cls", "given", "path"), MISSING)
def test_a_missing_required_field_is_a_message_validation_error_naming_it(
    cls: Callable[..., Any], given: dict[str, Any], path: str
) -> None:
    with pytest.raises(MessageValidationError) as info:
        cls(**given)
    assert info.value.path == path
    assert str(info.value).startswith(f"{path}: field required")
    assert cls.__name__ in str(info.value)


def test_the_error_is_still_a_type_error_for_callers_that_catch_one() -> None:
    with pytest.raises(TypeError):
        ToolResult()  # pyright: ignore[reportCallIssue]
    assert issubclass(MessageFieldError, MessageValidationError)
    assert issubclass(MessageFieldError, TypeError)


def test_every_missing_field_is_listed_and_the_path_is_the_first() -> None:
    with pytest.raises(MessageFieldError) as info:
        ToolCall()  # pyright: ignore[reportCallIssue]
    assert info.value.path == "id"
    assert str(info.value) == "id: field required: ToolCall needs id, name"


def test_an_unknown_field_is_named_too() -> None:
    with pytest.raises(MessageFieldError) as info:
        ToolCall(id="c", name="n", nmae="x")  # pyright: ignore[reportCallIssue]
    assert info.value.path == "nmae"
    assert str(info.value).startswith("nmae: unknown field")


def test_a_positional_argument_stays_a_plain_type_error() -> None:
    with pytest.raises(TypeError) as info:
        TextBlock("hi")  # pyright: ignore[reportCallIssue]
    assert not isinstance(info.value, MessageValidationError)


def test_construction_and_decoding_agree_on_the_path() -> None:
    with pytest.raises(MessageValidationError) as decoded:
        decode(ToolCall, {"type": "tool_use", "id": "c"})
    with pytest.raises(MessageValidationError) as built:
        ToolCall(id="c")  # pyright: ignore[reportCallIssue]
    assert decoded.value.path == built.value.path == "name"


def test_well_formed_records_still_build_and_decode() -> None:
    call = ToolCall(id="c", name="n", arguments={"q": 1})
    message = Message(role="assistant", content=(call,))
    assert Message.from_json(message.to_json()) == message
    assert ToolResult(tool_call_id="c").tool_call_id == "c"
