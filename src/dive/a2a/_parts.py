"""A2A message parts ↔ dive content.

What a client sends becomes a user ``Message``; what the agent wrote becomes A2A messages.

Inbound parts: text stays text; a data part becomes its JSON text; a file (inline bytes or a
URL) becomes an image block (jpeg, png, gif, webp), a document block (PDF, or ``text/*``
inline) or is refused with ``ContentTypeNotSupportedError`` naming its media type.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from typing import Any, cast

from a2a.types import ContentTypeNotSupportedError, Part, Role
from a2a.types import Message as A2AMessage
from google.protobuf import struct_pb2
from google.protobuf.json_format import MessageToDict, ParseDict

from dive.messages import (
    Base64Source,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    TextSource,
    UrlSource,
)
from dive.turns import is_reminder

__all__ = [
    "agent_message",
    "answer_text",
    "data_part",
    "history_messages",
    "message_blocks",
    "message_text",
    "part_data",
    "text_part",
]

_IMAGES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def text_part(text: str) -> Part:
    """A text part."""
    return Part(text=text)


def data_part(data: Any) -> Part:
    """A data part holding any JSON value."""
    return Part(data=ParseDict(data, struct_pb2.Value()))


def part_data(part: Part) -> Any:
    """The JSON value of a data part (whole numbers come back as ``int``)."""
    return _ints(MessageToDict(part.data))


def _ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): _ints(v) for k, v in cast("dict[Any, Any]", value).items()}
    if isinstance(value, list):
        return [_ints(v) for v in cast("list[Any]", value)]
    return value


def message_text(message: A2AMessage) -> str:
    """The text of a message: text parts, and data parts as JSON, joined by newlines."""
    out: list[str] = []
    for part in message.parts:
        if part.HasField("text"):
            out.append(part.text)
        elif part.HasField("data"):
            out.append(json.dumps(part_data(part), ensure_ascii=False))
    return "\n".join(out)


def message_blocks(message: A2AMessage) -> list[ContentBlock]:
    """The content blocks of a user message (see the module docstring)."""
    blocks: list[ContentBlock] = []
    for part in message.parts:
        if part.HasField("text"):
            blocks.append(TextBlock(text=part.text))
        elif part.HasField("data"):
            blocks.append(TextBlock(text=json.dumps(part_data(part), ensure_ascii=False)))
        elif part.HasField("raw"):
            blocks.append(_raw_block(part))
        elif part.HasField("url"):
            blocks.append(_url_block(part))
    return blocks


def _raw_block(part: Part) -> ContentBlock:
    media = part.media_type or "application/octet-stream"
    if media in _IMAGES:
        data = base64.b64encode(part.raw).decode()
        return ImageBlock(source=Base64Source(media_type=media, data=data))
    if media == "application/pdf":
        data = base64.b64encode(part.raw).decode()
        return DocumentBlock(source=Base64Source(media_type=media, data=data), title=_name(part))
    if media.startswith("text/"):
        text = part.raw.decode("utf-8", errors="replace")
        return DocumentBlock(source=TextSource(data=text, media_type=media), title=_name(part))
    raise ContentTypeNotSupportedError(
        f"a file part of type {media!r} cannot be given to the agent; send text, data, "
        "images (jpeg, png, gif, webp), PDF or text files"
    )


def _url_block(part: Part) -> ContentBlock:
    media = part.media_type
    if media in _IMAGES:
        return ImageBlock(source=UrlSource(url=part.url))
    if media == "application/pdf":
        return DocumentBlock(source=UrlSource(url=part.url), title=_name(part))
    raise ContentTypeNotSupportedError(
        f"a file URL of type {media or 'unknown'!r} cannot be given to the agent; send "
        "images (jpeg, png, gif, webp) or PDF by URL, with their media type"
    )


def _name(part: Part) -> str | None:
    return part.filename or None


def answer_text(messages: Sequence[Message]) -> str:
    """The last run of assistant text (after the last tool result or user message)."""
    passages: list[str] = []
    for m in reversed(messages):
        if m.role != "assistant":
            if passages or m.role == "tool" or not is_reminder(m):
                break
            continue
        if m.text.strip():
            passages.append(m.text)
    return "\n\n".join(reversed(passages)).strip()


def agent_message(
    parts: Iterable[Part], *, message_id: str, task_id: str, context_id: str
) -> A2AMessage:
    """An agent message of a task."""
    return A2AMessage(
        message_id=message_id,
        role=Role.ROLE_AGENT,
        parts=list(parts),
        task_id=task_id,
        context_id=context_id,
    )


def history_messages(
    messages: Sequence[Message], *, task_id: str, context_id: str
) -> list[A2AMessage]:
    """The turn's conversation as A2A messages: user and assistant text, reminders left out.

    Ids are the dive message ids where set (the client's ``messageId`` of its input), else
    derived from the task id and position, so they are stable across reads.
    """
    out: list[A2AMessage] = []
    for n, m in enumerate(messages):
        if m.role not in ("user", "assistant") or is_reminder(m) or not m.text.strip():
            continue
        out.append(
            A2AMessage(
                message_id=m.id or f"{task_id}:{n}",
                role=Role.ROLE_USER if m.role == "user" else Role.ROLE_AGENT,
                parts=[text_part(m.text)],
                task_id=task_id,
                context_id=context_id,
            )
        )
    return out
