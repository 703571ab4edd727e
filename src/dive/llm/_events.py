"""Anthropic-shaped stream events, used by every provider.

A stream is ``message_start`` → per block (``content_block_start``, deltas,
``content_block_stop``) → ``message_delta`` (stop reason, cumulative usage) → ``message_stop``;
``ping`` may appear anywhere. A stream is finished only once ``message_stop`` arrived.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from dive.llm._usage import Usage
from dive.messages import ContentBlock, ProviderState
from dive.messages.codec import JSONValue

__all__ = [
    "CitationsDelta",
    "ContentBlockDelta",
    "ContentBlockStart",
    "ContentBlockStop",
    "Delta",
    "InputJSONDelta",
    "MessageDelta",
    "MessageStart",
    "MessageStop",
    "Ping",
    "SignatureDelta",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    """Appends text to a text block.

    Attributes:
        text: the text to append.
    """

    type: Literal["text_delta"] = "text_delta"
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class InputJSONDelta:
    """Appends a fragment of a tool call's JSON input.

    Attributes:
        partial_json: the next fragment of the JSON text (not valid JSON on its own).
    """

    type: Literal["input_json_delta"] = "input_json_delta"
    partial_json: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingDelta:
    """Appends reasoning text to a thinking block.

    Attributes:
        thinking: the reasoning text to append.
    """

    type: Literal["thinking_delta"] = "thinking_delta"
    thinking: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SignatureDelta:
    """Sets (replaces) a thinking block's signature; it comes last.

    Attributes:
        signature: the block's opaque signature.
    """

    type: Literal["signature_delta"] = "signature_delta"
    signature: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CitationsDelta:
    """Adds one citation to a text block.

    Attributes:
        citation: the citation, opaque provider JSON.
    """

    type: Literal["citations_delta"] = "citations_delta"
    citation: JSONValue


Delta = TextDelta | InputJSONDelta | ThinkingDelta | SignatureDelta | CitationsDelta


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageStart:
    """The response began; ``usage`` holds the input counts known so far.

    Attributes:
        id: the provider's response id, if any.
        model: the model that answers, as the provider names it.
        usage: the input counts known at the start, if any.
    """

    type: Literal["message_start"] = "message_start"
    id: str | None = None
    model: str | None = None
    usage: Usage | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentBlockStart:
    """A content block begins at ``index`` (text empty, tool input ``{}``).

    Attributes:
        index: the block's position in the response.
        block: the block as it starts.
    """

    type: Literal["content_block_start"] = "content_block_start"
    index: int
    block: ContentBlock


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentBlockDelta:
    """A fragment for the block at ``index``.

    Attributes:
        index: the position of the block it extends.
        delta: the fragment.
    """

    type: Literal["content_block_delta"] = "content_block_delta"
    index: int
    delta: Delta


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentBlockStop:
    """The block at ``index`` is complete.

    Attributes:
        index: the position of the finished block.
    """

    type: Literal["content_block_stop"] = "content_block_stop"
    index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageDelta:
    """Stop reason and the cumulative usage so far (it replaces earlier usage).

    Attributes:
        stop_reason: the provider's raw stop reason, once known.
        stop_sequence: the stop sequence that ended the output, if one did.
        stop_details: the provider's extra stop information (a refusal's category, say), JSON.
        usage: the cumulative usage so far.
        provider_state: replay data for the response, if the provider has any.
    """

    type: Literal["message_delta"] = "message_delta"
    stop_reason: str | None = None
    stop_sequence: str | None = None
    stop_details: JSONValue = None
    usage: Usage | None = None
    provider_state: ProviderState | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageStop:
    """The end marker: the response is complete."""

    type: Literal["message_stop"] = "message_stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class Ping:
    """Keep-alive; carries nothing."""

    type: Literal["ping"] = "ping"


StreamEvent = (
    MessageStart
    | ContentBlockStart
    | ContentBlockDelta
    | ContentBlockStop
    | MessageDelta
    | MessageStop
    | Ping
)
