"""Content blocks: the closed union of what a message can carry.

Every block is a frozen, slotted, keyword-only dataclass discriminated by ``type``. A provider
block dive does not model becomes an :class:`UnknownBlock`, kept verbatim and replayed only to
the provider that produced it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Annotated, Any, ClassVar, Literal, cast

from pydantic import ConfigDict, Field

from dive.errors import MessageValidationError
from dive.messages._fields import named_fields
from dive.messages.codec import FORBID_EXTRA, JSONValue, empty, freeze_mapping

__all__ = [
    "BLOCK_TAGS",
    "Base64Source",
    "CacheControl",
    "ContentBlock",
    "DocumentBlock",
    "DocumentSource",
    "FileSource",
    "ImageBlock",
    "ImageSource",
    "RedactedThinkingBlock",
    "ServerToolCall",
    "ServerToolResult",
    "TextBlock",
    "TextSource",
    "ThinkingBlock",
    "ToolCall",
    "ToolResult",
    "ToolResultContent",
    "UnknownBlock",
    "UrlSource",
]


def _check_str(value: object, path: str) -> None:
    if not isinstance(value, str):
        raise MessageValidationError(f"expected a string, got {type(value).__name__}", path=path)


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class CacheControl:
    """A prompt-cache breakpoint; ``ttl`` is ``"5m"`` (default) or ``"1h"``.

    Attributes:
        ttl: how long the cached prefix lives: ``"5m"`` (default) or ``"1h"``.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["ephemeral"] = "ephemeral"
    ttl: Literal["5m", "1h"] = "5m"

    def __post_init__(self) -> None:
        if self.ttl not in ("5m", "1h"):
            raise MessageValidationError(f"must be '5m' or '1h', got {self.ttl!r}", path="ttl")


# --- sources ------------------------------------------------------------------------------


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class Base64Source:
    """Inline base64 data with its media type.

    Attributes:
        media_type: the data's MIME type (``image/png``, ``application/pdf``, ...).
        data: the base64-encoded bytes.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["base64"] = "base64"
    media_type: str
    data: str


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class UrlSource:
    """Data the provider fetches from a URL.

    Attributes:
        url: where the provider fetches the data from.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["url"] = "url"
    url: str


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class FileSource:
    """A file previously uploaded to the provider.

    Attributes:
        file_id: the provider's id of the uploaded file.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["file"] = "file"
    file_id: str


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class TextSource:
    """A plain-text document body.

    Attributes:
        data: the document's text.
        media_type: its MIME type (default ``text/plain``).
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["text"] = "text"
    data: str
    media_type: str = "text/plain"


ImageSource = Annotated[Base64Source | UrlSource | FileSource, Field(discriminator="type")]
DocumentSource = Annotated[
    Base64Source | TextSource | UrlSource | FileSource, Field(discriminator="type")
]


# --- blocks --------------------------------------------------------------------------------


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class TextBlock:
    """Plain text, with optional opaque provider citations.

    Attributes:
        text: the text.
        citations: the provider's citations, opaque JSON, replayed to it as they came.
        cache_control: a prompt-cache breakpoint after this block, or None.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["text"] = "text"
    text: str
    citations: tuple[JSONValue, ...] = ()
    cache_control: CacheControl | None = None

    def __post_init__(self) -> None:
        if type(self.text) is not str:
            _check_str(self.text, "text")


_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class ImageBlock:
    """An image: jpeg, png, gif or webp.

    Attributes:
        source: where the image comes from (base64, URL or uploaded file).
        cache_control: a prompt-cache breakpoint after this block, or None.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["image"] = "image"
    source: ImageSource
    cache_control: CacheControl | None = None

    def __post_init__(self) -> None:
        src = self.source
        if isinstance(src, Base64Source) and src.media_type not in _IMAGE_TYPES:
            raise MessageValidationError(
                f"unsupported image type {src.media_type!r}; use one of "
                + ", ".join(sorted(_IMAGE_TYPES)),
                path="source.media_type",
            )


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentBlock:
    """A document (PDF or text) given to the model.

    Attributes:
        source: where the document comes from (base64, URL, uploaded file or text).
        title: a title shown to the model, if any.
        context: extra context about the document for the model, if any.
        citations: ask the provider to cite passages of the document.
        cache_control: a prompt-cache breakpoint after this block, or None.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["document"] = "document"
    source: DocumentSource
    title: str | None = None
    context: str | None = None
    citations: bool = False
    cache_control: CacheControl | None = None


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A client tool call requested by the model. ``arguments`` is always a JSON object.

    Attributes:
        id: the call's id; its result names it as ``tool_call_id``.
        name: the tool's name.
        arguments: the call's input, always a JSON object (read-only).
        raw_arguments: the model's argument text when it was not valid JSON (``arguments`` is then
            empty), else None.
        signature: an opaque provider signature on the call (Gemini's thought signature), replayed
            to that provider only.
        provider: the provider label that produced the call (set with ``signature``).
        cache_control: a prompt-cache breakpoint after this block, or None.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    arguments: Mapping[str, JSONValue] = field(default_factory=empty)
    raw_arguments: str | None = None
    signature: str | None = None
    provider: str | None = None
    cache_control: CacheControl | None = None

    def __post_init__(self) -> None:
        if type(self.id) is not str:
            _check_str(self.id, "id")
        if type(self.name) is not str:
            _check_str(self.name, "name")
        args: Any = self.arguments
        if type(args) is MappingProxyType:
            return
        if type(args) is not dict and not isinstance(args, Mapping):
            raise MessageValidationError("must be a JSON object", path="arguments")
        object.__setattr__(self, "arguments", freeze_mapping(self.arguments))


ToolResultContent = Annotated[TextBlock | ImageBlock | DocumentBlock, Field(discriminator="type")]
_RESULT_BLOCKS = (TextBlock, ImageBlock, DocumentBlock)


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The answer to one tool call; the sole block of a ``tool`` message.

    Attributes:
        tool_call_id: the id of the call this answers.
        name: the tool's name, if known.
        content: what the model sees: text, image and document blocks (a string becomes one text
            block).
        structured: the result as JSON for programs (``ToolReturn(structured=...)``), if any.
        is_error: the call failed; the content says how.
        cache_control: a prompt-cache breakpoint after this block, or None.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str | None = None
    content: tuple[ToolResultContent, ...] = ()
    structured: JSONValue = None
    is_error: bool = False
    cache_control: CacheControl | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.tool_call_id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise MessageValidationError("field required (a string)", path="tool_call_id")
        given: Any = self.content
        content: tuple[object, ...]
        if type(given) is tuple:
            content = given  # pyright: ignore[reportUnknownVariableType]
        elif isinstance(given, str):
            content = (TextBlock(text=given),)
        else:
            content = tuple(cast("Sequence[object]", given))
        for i, block in enumerate(content):
            if not isinstance(block, _RESULT_BLOCKS):
                raise MessageValidationError(
                    f"tool results hold text, image or document blocks, not {type(block).__name__}",
                    path=f"content[{i}]",
                )
        if content is not given:
            object.__setattr__(self, "content", content)

    @property
    def text(self) -> str:
        """The text blocks of the result, concatenated."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingBlock:
    """Model reasoning with its opaque signature. Never carries ``cache_control``.

    Attributes:
        thinking: the reasoning text.
        signature: the provider's opaque signature; Anthropic drops unsigned thinking.
        provider: the provider label that produced it; it is sent back to that provider only.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str = ""
    provider: str | None = None


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class RedactedThinkingBlock:
    """Encrypted reasoning, replayed verbatim to its provider.

    Attributes:
        data: the encrypted reasoning, opaque.
        provider: the provider label that produced it; it is sent back to that provider only.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str
    provider: str | None = None


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class ServerToolCall:
    """A tool the provider runs itself (web search, code execution…).

    Attributes:
        id: the call's id; its result names it as ``tool_use_id``.
        name: the server tool's name (``web_search``, ``code_execution``, ...).
        input: the call's input, JSON (read-only).
        provider: the provider label that ran it.
        cache_control: a prompt-cache breakpoint after this block, or None.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["server_tool_use"] = "server_tool_use"
    id: str
    name: str
    input: Mapping[str, JSONValue] = field(default_factory=empty)
    provider: str | None = None
    cache_control: CacheControl | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "input", freeze_mapping(self.input))


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class ServerToolResult:
    """The result of a server tool call, opaque to dive.

    Attributes:
        tool_use_id: the id of the server tool call this answers.
        result_type: the provider's block type (e.g. ``web_search_tool_result``).
        content: the result, opaque JSON.
        provider: the provider label that produced it.
        cache_control: a prompt-cache breakpoint after this block, or None.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["server_tool_result"] = "server_tool_result"
    tool_use_id: str
    result_type: str
    content: JSONValue = None
    provider: str | None = None
    cache_control: CacheControl | None = None


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownBlock:
    """A provider block dive does not model, kept verbatim (``data`` is the raw block JSON).

    Attributes:
        provider: the provider label that sent the block.
        block_type: the provider's own type name for it.
        data: the raw block JSON, verbatim (read-only).
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["unknown"] = "unknown"
    provider: str
    block_type: str
    data: Mapping[str, JSONValue] = field(default_factory=empty)

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", freeze_mapping(self.data))


ContentBlock = Annotated[
    TextBlock
    | ImageBlock
    | DocumentBlock
    | ToolCall
    | ToolResult
    | ThinkingBlock
    | RedactedThinkingBlock
    | ServerToolCall
    | ServerToolResult
    | UnknownBlock,
    Field(discriminator="type"),
]

BLOCK_CLASSES: tuple[type, ...] = (
    TextBlock,
    ImageBlock,
    DocumentBlock,
    ToolCall,
    ToolResult,
    ThinkingBlock,
    RedactedThinkingBlock,
    ServerToolCall,
    ServerToolResult,
    UnknownBlock,
)

BLOCK_TAGS = frozenset(
    {
        "text",
        "image",
        "document",
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "server_tool_result",
        "unknown",
        "base64",
        "url",
        "file",
    }
)
