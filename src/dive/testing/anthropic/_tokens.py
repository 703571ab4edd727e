"""The simulator's deterministic token counter and canonical JSON.

A block costs one token per four bytes (rounded up) of its canonical JSON — sorted keys, no
whitespace, UTF-8 — and at least one token. ``cache_control`` markers are left out, so moving
a breakpoint neither changes a count nor the prefix hash.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, cast

__all__ = ["block_tokens", "canonical", "output_tokens", "strip_cache_control"]

BYTES_PER_TOKEN = 4


def canonical(value: object) -> bytes:
    """Canonical JSON bytes: sorted keys, compact separators, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def strip_cache_control(block: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the block without ``cache_control`` (also inside ``tool_result`` content)."""
    out = {k: v for k, v in block.items() if k != "cache_control"}
    content = out.get("content")
    if out.get("type") == "tool_result" and isinstance(content, list):
        items = cast(list[object], content)
        out["content"] = [
            strip_cache_control(cast(Mapping[str, Any], item))
            if isinstance(item, Mapping)
            else item
            for item in items
        ]
    return out


def block_tokens(block: Mapping[str, Any]) -> int:
    """Simulated tokens of one block (≥ 1).

    Args:
        block: a content block as Anthropic JSON.
    """
    size = len(canonical(strip_cache_control(block)))
    return max(1, -(-size // BYTES_PER_TOKEN))


def output_tokens(content: Iterable[Mapping[str, Any]]) -> int:
    """Simulated output tokens of a generated response (never 0)."""
    return max(1, sum(block_tokens(block) for block in content))
