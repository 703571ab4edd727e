"""An MCP tool result as dive content.

=====================  ======================================================================
MCP content            dive block
=====================  ======================================================================
text                   ``TextBlock``
image                  ``ImageBlock`` (base64); a type models do not take becomes a note
audio                  a note naming its type and size (dive messages carry no audio)
embedded resource      text: ``TextBlock`` headed ``[resource <uri>]``; an image blob:
                       ``ImageBlock``; a PDF blob: ``DocumentBlock``; other blobs: a note
resource link          ``TextBlock`` ``[resource link <uri> ...]`` (read it with
                       ``server.read_resource(uri)``)
structuredContent      the result's ``structured`` (the JSON value as it came)
isError                an error result
=====================  ======================================================================
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from mcp import types

from dive.messages import Base64Source, DocumentBlock, ImageBlock, TextBlock
from dive.tools import ToolReturn

__all__ = ["to_tool_return"]

_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
Block = TextBlock | ImageBlock | DocumentBlock


def _size(data: str) -> str:
    try:
        n = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        n = len(data) * 3 // 4
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f} KiB"


def _note(what: str, media_type: str, data: str) -> TextBlock:
    return TextBlock(text=f"[{what} ({media_type}, {_size(data)}): not shown to the model]")


def _image(data: str, media_type: str, what: str = "image") -> Block:
    if media_type in _IMAGE_TYPES:
        return ImageBlock(source=Base64Source(media_type=media_type, data=data))
    return _note(what, media_type, data)


def _resource(item: types.EmbeddedResource) -> Block:
    res = item.resource
    uri = str(res.uri)
    media_type = res.mime_type or ""
    if isinstance(res, types.TextResourceContents):
        return TextBlock(text=f"[resource {uri}]\n{res.text}")
    if media_type in _IMAGE_TYPES:
        return _image(res.blob, media_type)
    if media_type == "application/pdf":
        return DocumentBlock(source=Base64Source(media_type=media_type, data=res.blob), title=uri)
    return _note(f"resource {uri}", media_type or "binary", res.blob)


def _link(item: types.ResourceLink) -> TextBlock:
    parts = [f"[resource link {item.uri}", item.name]
    if item.mime_type:
        parts.append(f"({item.mime_type})")
    text = " ".join(parts) + "]"
    if item.description:
        text += f" {item.description}"
    return TextBlock(text=text)


def _block(item: types.ContentBlock) -> Block:
    match item:
        case types.TextContent():
            return TextBlock(text=item.text)
        case types.ImageContent():
            return _image(item.data, item.mime_type)
        case types.AudioContent():
            return _note("audio", item.mime_type, item.data)
        case types.EmbeddedResource():
            return _resource(item)
        case types.ResourceLink():  # pragma: no branch
            return _link(item)


def to_tool_return(result: types.CallToolResult) -> ToolReturn:
    """``result`` as a dive tool output (``structured`` kept, ``isError`` an error result)."""
    blocks = [_block(item) for item in result.content]
    structured: Any = result.structured_content
    return ToolReturn(content=blocks or "", is_error=result.is_error, structured=structured)
