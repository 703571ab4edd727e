"""The history → Gemini ``contents`` (``google-genai`` REST shapes as plain dicts, snake_case).

- User content: text, images and documents. Base64 data becomes ``inline_data``, a URL or an
  uploaded file ``file_data`` (the media type guessed from the name; a Files API URI may go
  without one), a text document a text part. Content Gemini cannot take raises
  :class:`UnsupportedContentError` before any request (a GIF, a document type it does not
  read, a URL whose media type cannot be told).
- Tool results become ``function_response`` parts of one user turn (``{"output": …}`` or
  ``{"error": …}``: the structured value, else the text). Their images and documents go inside
  the function response (``parts``) on Gemini 3 models, which take multimodal function
  responses, and otherwise as parts after the group's function responses.
- Model content goes back as it came: text, images, function calls with their thought
  signatures, and only Gemini's own thought parts, code execution parts and unknown parts.
  Signatures on other parts come back from ``provider_state`` onto the same part.
- An empty history (instructions only) becomes one empty user turn: the API needs contents.
"""

from __future__ import annotations

import base64
import mimetypes
import re
from collections.abc import Sequence
from typing import Any, cast
from urllib.parse import urlsplit

from dive.errors import UnsupportedContentError
from dive.messages import (
    Base64Source,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    Message,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    TextSource,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    UnknownBlock,
    UrlSource,
)
from dive.providers._history import sendable
from dive.providers.google._capabilities import capabilities_for
from dive.providers.google._settings import thaw

__all__ = ["LABEL", "build_contents", "media_part"]

LABEL = "google"
Json = dict[str, Any]

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"})
_DOCUMENT_TYPES = frozenset({"application/pdf", "application/json", "application/xml"})
_FILES_API = re.compile(
    r"https://(?:[a-z0-9-]+-)?generativelanguage(?:\.sandbox)?\.googleapis\.com/"
    r"(?:v1|v1beta|v1alpha)/files/[a-z0-9-]+"
)
CODE_EXECUTION = "code_execution"
CODE_RESULT = "code_execution_result"


def _bytes(signature: str) -> bytes:
    """Signatures come back from the SDK as URL-safe base64; accept either alphabet."""
    padded = signature + "=" * (-len(signature) % 4)
    return base64.urlsafe_b64decode(padded.replace("+", "-").replace("/", "_"))


def _check_type(media_type: str, block: ImageBlock | DocumentBlock) -> None:
    if media_type in IMAGE_TYPES:
        return
    if isinstance(block, DocumentBlock) and (
        media_type in _DOCUMENT_TYPES or media_type.startswith("text/")
    ):
        return
    if isinstance(block, ImageBlock):
        raise UnsupportedContentError(
            f"Gemini does not take {media_type} images (it takes PNG, JPEG, WebP, HEIC and "
            "HEIF): convert the image before sending it"
        )
    raise UnsupportedContentError(
        f"Gemini does not read {media_type} documents (it reads PDF, text, JSON and XML): "
        "convert the document, or send its text as a text document"
    )


_EXTENSIONS = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".heic": "image/heic",
    ".heif": "image/heif",
    ".gif": "image/gif",
    ".pdf": "application/pdf",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".csv": "text/csv",
    ".html": "text/html",
    ".json": "application/json",
    ".xml": "application/xml",
}


def _guess(uri: str) -> str | None:
    """The media type a URI's name says (a fixed table first, then the system's)."""
    path = urlsplit(uri).path or uri
    dot = path.rfind(".")
    if dot > path.rfind("/"):
        known = _EXTENSIONS.get(path[dot:].lower())
        if known is not None:
            return known
    return mimetypes.guess_type(path, strict=False)[0]


def media_part(block: ImageBlock | DocumentBlock) -> Json:
    """The part for an image or document block.

    Raises:
        UnsupportedContentError: a media type Gemini cannot take, or a URL whose media type
            cannot be told from its name.
    """
    src = block.source
    if isinstance(src, Base64Source):
        _check_type(src.media_type, block)
        return {"inline_data": {"mime_type": src.media_type, "data": src.data}}
    if isinstance(src, TextSource):
        return {"text": src.data}
    uri = src.url if isinstance(src, UrlSource) else src.file_id
    file_data: Json = {"file_uri": uri}
    media_type = _guess(uri)
    if media_type is not None:
        _check_type(media_type, block)
        file_data["mime_type"] = media_type
    elif isinstance(src, UrlSource) and not _FILES_API.match(uri):
        kind = "image" if isinstance(block, ImageBlock) else "document"
        raise UnsupportedContentError(
            f"cannot tell the media type of the {kind} at {uri!r}, which Gemini needs for a "
            "URL: use a URL whose name ends in its type (.png, .jpg, .pdf…), or send the data "
            "as base64"
        )
    return {"file_data": file_data}


def _wire_part(block: ContentBlock) -> Json | None:
    """A model (or user) content block on the wire, or None when it is not sent to Gemini."""
    match block:
        case TextBlock():
            return {"text": block.text} if block.text else None
        case ImageBlock() | DocumentBlock():
            return media_part(block)
        case ThinkingBlock():
            if block.provider != LABEL:
                return None
            part: Json = {"text": block.thinking, "thought": True}
            if block.signature:
                part["thought_signature"] = _bytes(block.signature)
            return part
        case ToolCall():
            part = {
                "function_call": {"name": block.name, "args": dict(block.arguments), "id": block.id}
            }
            if block.signature and block.provider == LABEL:
                part["thought_signature"] = _bytes(block.signature)
            return part
        case ServerToolCall() if block.provider == LABEL and block.name == CODE_EXECUTION:
            return {"executable_code": thaw(block.input)}
        case ServerToolResult() if block.provider == LABEL and block.result_type == CODE_RESULT:
            return {"code_execution_result": thaw(block.content)}
        case UnknownBlock() if block.provider == LABEL and block.block_type == "part":
            return thaw(block.data)
        case _:
            return None  # another provider's blocks, and response metadata


def _signatures(m: Message) -> dict[int, str]:
    """Signatures of non-call parts, by content index, from Gemini's own provider state."""
    state = m.provider_state
    if state is None or state.provider != LABEL or not isinstance(state.data, list):
        return {}
    out: dict[int, str] = {}
    for entry in state.data:
        if isinstance(entry, dict) and isinstance(entry.get("block"), int):
            out[cast(int, entry["block"])] = str(entry.get("signature") or "")
    return out


def _message_parts(m: Message) -> list[Json]:
    signed = _signatures(m)
    parts: list[Json] = []
    wire: Json | None
    for i, b in enumerate(m.content):
        wire = _wire_part(b)
        if wire is None and i in signed and isinstance(b, TextBlock):
            wire = {"text": ""}  # an empty part that only carries a signature
        if wire is None:
            continue
        if i in signed and signed[i] and "function_call" not in wire:
            wire["thought_signature"] = _bytes(signed[i])
        parts.append(wire)
    return parts


def _response_part(r: ToolResult, name: str, media_inside: bool) -> tuple[Json, list[Json]]:
    """The ``function_response`` part of a result, and the parts that go after the group."""
    key = "error" if r.is_error else "output"
    response: Json = {
        "name": name,
        "id": r.tool_call_id,
        "response": {key: r.structured if r.structured is not None else r.text},
    }
    inside: list[Json] = []
    after: list[Json] = []
    for b in r.content:
        if isinstance(b, TextBlock):
            continue
        part = media_part(b)
        (inside if media_inside and "inline_data" in part else after).append(part)
    if inside:
        response["parts"] = inside
    return {"function_response": response}, after


def build_contents(
    messages: Sequence[Message], *, model: str | None = None
) -> tuple[list[Json], list[str]]:
    """Gemini ``contents`` and the text of any system-role messages.

    A call without a result is answered (``sendable``) right after the results of its group,
    as a ``function_response`` whose response is ``{"error": <Unknown result text>}``.

    Args:
        messages: the history.
        model: the model id; Gemini 3 models get images and documents of tool results inside
            the function response (None: after the group's function responses).

    Raises:
        UnsupportedContentError: an image or document Gemini cannot take.
    """
    media_inside = capabilities_for(model).function_response_media if model else False
    contents: list[Json] = []
    system: list[str] = []
    names: dict[str, str] = {}
    pending: list[Json] = []  # media of the current group of tool results
    for m in sendable(messages):
        if m.role == "system":
            if m.text:
                system.append(m.text)
            continue
        if m.role == "tool":
            r = m.tool_result
            if r is not None:
                part, after = _response_part(
                    r, names.pop(r.tool_call_id, r.name or ""), media_inside
                )
                _append(contents, "user", [part])
                pending.extend(after)
            continue
        _append(contents, "user", pending)
        pending = []
        for c in m.tool_calls:
            names[c.id] = c.name
        _append(contents, "model" if m.role == "assistant" else "user", _message_parts(m))
    _append(contents, "user", pending)
    if not contents:
        contents.append({"role": "user", "parts": [{"text": ""}]})
    return contents, system


def _append(contents: list[Json], role: str, parts: list[Json]) -> None:
    if not parts:
        return
    if contents and contents[-1]["role"] == role:
        contents[-1]["parts"].extend(parts)
    else:
        contents.append({"role": role, "parts": parts})
