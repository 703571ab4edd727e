"""The simulator's deterministic token counter.

One token per four bytes (rounded up), at least one per part:

- a text or thought part costs its text's UTF-8 bytes;
- any other part (``functionCall``, ``functionResponse``, ``inlineData``, …) costs its
  canonical JSON (sorted keys, no whitespace), without ``thought`` and ``thoughtSignature``
  (signatures are opaque and never counted);
- a prompt is its ``systemInstruction`` parts, every ``contents`` part and the canonical JSON
  of each ``tools`` entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, cast

__all__ = ["BYTES_PER_TOKEN", "bytes_tokens", "canonical", "part_tokens", "prompt_tokens"]

BYTES_PER_TOKEN = 4


def canonical(value: object) -> bytes:
    """Canonical JSON bytes: sorted keys, compact separators, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def bytes_tokens(size: int) -> int:
    """Tokens for ``size`` bytes (≥ 1)."""
    return max(1, -(-size // BYTES_PER_TOKEN))


def part_tokens(part: Mapping[str, Any]) -> int:
    """Simulated tokens of one part (≥ 1).

    Args:
        part: a content part as Gemini JSON.
    """
    text = part.get("text")
    if isinstance(text, str):
        return bytes_tokens(len(text.encode()))
    rest = {k: v for k, v in part.items() if k not in ("thought", "thoughtSignature")}
    return bytes_tokens(len(canonical(rest)))


def _parts(content: object) -> Iterable[Mapping[str, Any]]:
    if not isinstance(content, Mapping):
        return ()
    parts = cast(Mapping[str, Any], content).get("parts")
    if not isinstance(parts, list):
        return ()
    items = cast(list[object], parts)
    return [cast(Mapping[str, Any], p) for p in items if isinstance(p, Mapping)]


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """Simulated prompt tokens of a ``generateContent`` request body.

    Args:
        body: the request body as JSON.
    """
    total = sum(part_tokens(p) for p in _parts(body.get("systemInstruction")))
    contents = body.get("contents")
    if isinstance(contents, list):
        for content in cast(list[object], contents):
            total += sum(part_tokens(p) for p in _parts(content))
    tools = body.get("tools")
    if isinstance(tools, list):
        total += sum(bytes_tokens(len(canonical(tool))) for tool in cast(list[object], tools))
    return total
