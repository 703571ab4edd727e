"""Toolsets (tools resolved before every model call) and name suggestions."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from dive.tools._tool import Tool

if TYPE_CHECKING:
    from dive.tools._context import ToolContext

__all__ = ["Toolset", "suggest_tool_names"]


@runtime_checkable
class Toolset(Protocol):
    """A dynamic source of tools (MCP servers, permission-filtered sets…)."""

    @property
    def name(self) -> str:
        """The toolset's name, used in error messages."""
        ...

    async def tools(self, ctx: ToolContext) -> Sequence[Tool]:
        """The tools available for the next model call.

        Args:
            ctx: the context of the coming model call (ids, deps).
        """
        ...


_SEGMENTS = re.compile(r"[_\-.]+|(?<=[a-z])(?=[A-Z])")


def _levenshtein(a: str, b: str, bound: int) -> int:
    if abs(len(a) - len(b)) > bound:
        return bound + 1
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        best = i
        for j, cb in enumerate(b, 1):
            v = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            cur.append(v)
            best = min(best, v)
        if best > bound:
            return bound + 1
        prev = cur
    return prev[-1]


def _namespace(name: str) -> str:
    return name.rsplit("__", 1)[0] if "__" in name else ""


def suggest_tool_names(name: str, candidates: Iterable[str], limit: int = 3) -> tuple[str, ...]:
    """Up to ``limit`` close names: segment-suffix match, then edit distance, then namespace.

    Args:
        name: the unknown name the model used.
        candidates: the names of the tools available.
        limit: at most this many suggestions.
    """
    wanted = [s for s in _SEGMENTS.split(name.lower()) if s]
    bound = max(2, len(name) // 3)
    ranked: list[tuple[int, int, int, str]] = []
    for cand in candidates:
        if cand == name:
            continue
        segs = [s for s in _SEGMENTS.split(cand.lower()) if s]
        suffix = bool(wanted and segs) and (
            segs[-len(wanted) :] == wanted or wanted[-len(segs) :] == segs
        )
        dist = _levenshtein(name.lower(), cand.lower(), bound)
        if not suffix and dist > bound:
            continue
        same_ns = _namespace(cand) == _namespace(name)
        ranked.append((0 if suffix else 1, dist, 0 if same_ns else 1, cand))
    ranked.sort()
    return tuple(r[3] for r in ranked[:limit])
