"""How many tokens a context holds: counted by the model when it can, estimated otherwise.

The estimate is deliberately pessimistic (one token per 3.5 characters of the message JSON,
plus a small overhead per message and a fixed price per image or document), so a budget
computed with it is rarely exceeded by the real count. A model that implements
:class:`~dive.llm.TokenCounter` is asked instead; if that call fails, the estimate stands in.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from dive.errors import ProviderError
from dive.llm import Model, ModelRequest, TokenCounter
from dive.messages import (
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolDefinition,
    ToolResult,
)

__all__ = ["CHARS_PER_TOKEN", "ContextSize", "estimate_text", "estimate_tokens", "measure"]

CHARS_PER_TOKEN = 3.5
"""Characters per token the estimate assumes (English prose runs nearer 4)."""

_PER_MESSAGE = 4
_PER_MEDIA = 1_600

log = logging.getLogger("dive.compaction")


def estimate_text(text: str) -> int:
    """Tokens of ``text`` by the estimate."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _message_chars(m: Message) -> tuple[int, int]:
    chars = 0
    media = 0
    for b in m.content:
        if isinstance(b, TextBlock):
            chars += len(b.text)
        elif isinstance(b, ToolCall):
            chars += len(b.name) + len(str(dict(b.arguments))) + len(b.raw_arguments or "")
        elif isinstance(b, ToolResult):
            for c in b.content:
                if isinstance(c, TextBlock):
                    chars += len(c.text)
                else:
                    media += 1
            if b.structured is not None:
                chars += len(str(b.structured))
        elif isinstance(b, ThinkingBlock):
            chars += len(b.thinking)
        elif isinstance(b, ImageBlock | DocumentBlock):
            media += 1
        else:
            chars += len(str(b))
    return chars, media


def estimate_message(m: Message) -> int:
    """Tokens of one message by the estimate."""
    chars, media = _message_chars(m)
    return math.ceil(chars / CHARS_PER_TOKEN) + _PER_MESSAGE + media * _PER_MEDIA


def estimate_tokens(
    messages: Sequence[Message], *, system: str = "", tools: Sequence[ToolDefinition] = ()
) -> int:
    """The estimated input tokens of a request with this system prompt, tools and history.

    Args:
        messages: the history.
        system: the system prompt.
        tools: the tool definitions sent with it.
    """
    total = estimate_text(system) if system else 0
    for d in tools:
        total += estimate_text(d.name + d.description + str(dict(d.input_schema)))
    return total + sum(estimate_message(m) for m in messages)


@dataclass(frozen=True, slots=True)
class ContextSize:
    """A context's size in tokens and how it was found (``counted`` or ``estimated``)."""

    tokens: int
    how: str


async def measure(
    model: Model | None,
    messages: Sequence[Message],
    *,
    system: str = "",
    tools: Sequence[ToolDefinition] = (),
) -> ContextSize:
    """Count with ``model`` when it is a ``TokenCounter``; otherwise (or on failure) estimate."""
    if model is not None and isinstance(model, TokenCounter):
        request = ModelRequest(system=system, messages=tuple(messages), tools=tuple(tools))
        try:
            return ContextSize(await model.count_tokens(request), "counted")
        except ProviderError as exc:
            log.warning("counting tokens failed (%s); using the estimate", exc)
    return ContextSize(estimate_tokens(messages, system=system, tools=tools), "estimated")
