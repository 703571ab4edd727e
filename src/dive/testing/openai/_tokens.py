"""The simulator's deterministic token counter and prompt serialization.

Text costs one token per four UTF-8 bytes, rounded up. A prompt is serialized in prefix order —
the tools, then ``instructions`` (Responses), then every message or input item — each part as
canonical JSON (sorted keys, no whitespace, UTF-8) followed by a newline; its token count is
one per four bytes of that serialization (at least one). Appending messages therefore only
appends bytes, so a conversation's earlier turns are a byte prefix of its later requests, which
is what the prompt cache (``_cache``) matches on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

__all__ = [
    "BYTES_PER_TOKEN",
    "bytes_tokens",
    "canonical",
    "chat_prompt",
    "input_items",
    "prompt_tokens",
    "responses_prompt",
    "text_tokens",
]

BYTES_PER_TOKEN = 4


def canonical(value: object) -> bytes:
    """Canonical JSON bytes: sorted keys, compact separators, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def bytes_tokens(size: int) -> int:
    """Tokens of ``size`` bytes (rounded up)."""
    return -(-size // BYTES_PER_TOKEN)


def text_tokens(text: str) -> int:
    """Simulated tokens of a text (0 for the empty string).

    Args:
        text: any text.
    """
    return bytes_tokens(len(text.encode()))


def _serialize(parts: Iterable[object]) -> bytes:
    return b"".join(canonical(part) + b"\n" for part in parts)


def _as_list(value: object) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []


def chat_prompt(body: Mapping[str, Any]) -> bytes:
    """The serialized prompt of a Chat Completions body: tools, then messages."""
    return _serialize([*_as_list(body.get("tools")), *_as_list(body.get("messages"))])


def input_items(value: object) -> list[Any]:
    """Responses ``input`` as a list of items (a string is one user message)."""
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return _as_list(value)


def responses_prompt(tools: Sequence[Any], instructions: object, items: Sequence[Any]) -> bytes:
    """The serialized prompt of a Responses request: tools, instructions, input items."""
    head: list[object] = list(tools)
    if instructions is not None:
        head.append({"instructions": instructions})
    return _serialize([*head, *items])


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """Simulated prompt tokens of a request body.

    Chat when it has ``messages``, else Responses; a ``previous_response_id`` context is not
    included.

    Args:
        body: a Chat or Responses request body as JSON.
    """
    if "messages" in body:
        prompt = chat_prompt(body)
    else:
        prompt = responses_prompt(
            _as_list(body.get("tools")), body.get("instructions"), input_items(body.get("input"))
        )
    return max(1, bytes_tokens(len(prompt)))
