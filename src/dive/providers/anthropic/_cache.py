"""Prompt-cache marker placement (stateless, per request; spec executor.md §10).

Candidates, in priority order: (a) the last tool definition (tools are sorted by name), (b) the
system block, (c) the last cacheable block of the newest message, (d) the last cacheable block
of the previous request's newest message — the message just before the most recent assistant
message. With ``first_block`` (``cache_first_user_block``), while message 0 is the newest
message, its first block (a rendered prompt before a per-run suffix) takes the place of (d).
The dicts are the outgoing request's, built fresh per request: nothing is marked in the
history, so no marker outlives its request. Caller-placed markers count against the budget
of 4; dive trims its own to fit and never moves or removes the caller's. A ``1h`` marker never
follows a ``5m`` one in prefix order.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_MARKERS", "count_markers", "place_markers"]

MAX_MARKERS = 4
_UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})

Json = dict[str, Any]


def _cacheable(block: Json) -> bool:
    if block.get("type") in _UNCACHEABLE:
        return False
    return not (block.get("type") == "text" and not block.get("text"))


def _last_cacheable(blocks: list[Json]) -> Json | None:
    for b in reversed(blocks):
        if _cacheable(b):
            return b
    return None


def count_markers(tools: list[Json], system: list[Json], messages: list[Json]) -> int:
    """Markers already on the request (the caller's)."""
    n = sum(1 for t in tools if "cache_control" in t)
    n += sum(1 for b in system if "cache_control" in b)
    n += sum(1 for m in messages for b in m["content"] if "cache_control" in b)
    return n


def _prefix(tools: list[Json], system: list[Json], messages: list[Json]) -> list[Json]:
    return [*tools, *system, *(b for m in messages for b in m["content"])]


def _previous(messages: list[Json], first_block: bool) -> Json | None:
    """Candidate (d): the previous request's newest block, or the prompt block of message 0."""
    if first_block and len(messages) == 1:
        return next((b for b in messages[0]["content"] if _cacheable(b)), None)
    last_assistant = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "assistant"), None
    )
    if last_assistant is not None and last_assistant >= 1:
        return _last_cacheable(messages[last_assistant - 1]["content"])
    return None


def place_markers(
    tools: list[Json],
    system: list[Json],
    messages: list[Json],
    *,
    ttl: str = "5m",
    first_block: bool = False,
) -> int:
    """Mark the candidates in place (the dicts are the outgoing request's); return the total.

    Args:
        tools: the request's tool definitions, as sent.
        system: the request's system blocks, as sent.
        messages: the request's messages, as sent.
        ttl: the markers' lifetime, ``"5m"`` or ``"1h"``.
        first_block: also mark the first block of the first user message while it is the newest
            (``ModelSettings.cache_first_user_block``).
    """
    used = count_markers(tools, system, messages)
    candidates: list[Json | None] = [
        tools[-1] if tools else None,
        _last_cacheable(system),
        _last_cacheable(messages[-1]["content"]) if messages else None,
        _previous(messages, first_block),
    ]
    chosen: list[Json] = []
    for block in candidates:
        if used >= MAX_MARKERS:
            break
        if block is None or "cache_control" in block or any(block is c for c in chosen):
            continue
        chosen.append(block)
        used += 1
    if not chosen:
        return used
    order = _prefix(tools, system, messages)
    position = {id(b): i for i, b in enumerate(order)}
    first_5m = min(
        (
            position[id(b)]
            for b in order
            if "cache_control" in b and b["cache_control"].get("ttl", "5m") == "5m"
        ),
        default=None,
    )
    for block in chosen:
        marker: Json = {"type": "ephemeral"}
        if ttl == "1h" and (first_5m is None or position[id(block)] < first_5m):
            marker["ttl"] = "1h"
        block["cache_control"] = marker
    return used
