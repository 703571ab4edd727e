"""The history as the summariser reads it: one text entry per message, shrunk to fit.

The summariser is sent a transcript, not the messages themselves, so a request never carries
a tool call without its result, never invites a tool call, and works the same on every
provider. Each block is capped (``max_block_chars``; the middle of a long block is cut and the
cut says how much); an entry larger than a whole request's budget is cut further. Entries are
then grouped into chunks that each fit the budget, in order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from dive.compaction._tokens import CHARS_PER_TOKEN, estimate_text
from dive.messages import (
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
)

__all__ = ["Entry", "chunk", "render", "shrink"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One message as transcript text, with its estimated tokens."""

    text: str
    tokens: int


def shrink(text: str, limit: int) -> str:
    """``text`` cut to at most about ``limit`` characters, keeping its start and end."""
    if len(text) <= limit:
        return text
    keep = max(limit - 60, 20)
    head = keep * 2 // 3
    tail = keep - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[len(text) - tail :]}"


def _block(b: object, cap: int) -> str:
    if isinstance(b, TextBlock):
        return shrink(b.text, cap)
    if isinstance(b, ToolCall):
        args = b.raw_arguments or json.dumps(dict(b.arguments), ensure_ascii=False, default=str)
        return f"[tool call {b.name} id={b.id}] {shrink(args, cap)}"
    if isinstance(b, ToolResult):
        parts = [shrink(c.text, cap) if isinstance(c, TextBlock) else "[media]" for c in b.content]
        if b.structured is not None and not parts:
            parts.append(shrink(json.dumps(b.structured, default=str), cap))
        flag = " error" if b.is_error else ""
        return f"[tool result{flag} {b.name or ''} id={b.tool_call_id}] " + "\n".join(parts)
    if isinstance(b, ThinkingBlock):
        return ""  # reasoning is not carried into the summary
    if isinstance(b, ImageBlock):
        return "[image]"
    if isinstance(b, DocumentBlock):
        return "[document]"
    return f"[{getattr(b, 'type', type(b).__name__)} block]"


def render(message: Message, *, max_block_chars: int) -> Entry:
    """The transcript entry of one message."""
    label = "summary of earlier conversation" if message.kind == "compaction_summary" else None
    label = label or message.role
    body = "\n".join(t for t in (_block(b, max_block_chars) for b in message.content) if t)
    text = f"<{label}>\n{body}\n</{label}>"
    return Entry(text, estimate_text(text))


def chunk(entries: Sequence[Entry], budget: int) -> list[list[Entry]]:
    """Entries grouped in order into chunks of at most ``budget`` tokens each.

    An entry larger than the budget on its own is cut to fit and forms its own chunk.
    """
    out: list[list[Entry]] = []
    current: list[Entry] = []
    used = 0
    for e in entries:
        if e.tokens > budget:
            e = Entry(shrink(e.text, int(budget * CHARS_PER_TOKEN)), budget)
        if current and used + e.tokens > budget:
            out.append(current)
            current, used = [], 0
        current.append(e)
        used += e.tokens
    if current:
        out.append(current)
    return out
