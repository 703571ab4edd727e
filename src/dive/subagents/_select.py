"""Which of the parent's tools a subagent gets.

Start from the parent's tools and toolsets, minus the subagent machinery itself (the
``Agent`` tool, so a subagent never starts subagents of its own, and ``TaskStop``) and the
parent's structured-output tool. Then: the definition's allowlist (when it has one), minus
its disallowed names, and, for a read-only definition, only tools whose effect is read-only.
Toolset tools (MCP servers, say) are filtered the same way each time they are resolved.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

from dive.subagents._definition import SubagentDefinition
from dive.tools import Tool, ToolContext, Toolset

__all__ = ["FilteredToolset", "ToolFilter", "select_tools"]


def _name(pattern: str) -> str:
    """``Bash(git:*)`` (a permission rule) names the tool ``Bash``."""
    return pattern.split("(", 1)[0].strip()


class ToolFilter:
    """The rules of one definition, applied to one tool at a time."""

    __slots__ = ("_allow", "_deny", "_excluded", "_read_only")

    def __init__(self, definition: SubagentDefinition, excluded: frozenset[int]) -> None:
        self._allow = tuple(_name(p) for p in definition.tools)
        self._deny = tuple(_name(p) for p in definition.disallowed_tools)
        self._read_only = definition.read_only
        self._excluded = excluded

    def keeps(self, tool: Tool) -> bool:
        """True when the subagent gets ``tool``."""
        if id(tool) in self._excluded or getattr(tool, "subagent_machinery", False):
            return False
        name = tool.name
        if self._allow and not any(fnmatch.fnmatchcase(name, p) for p in self._allow):
            return False
        if any(fnmatch.fnmatchcase(name, p) for p in self._deny):
            return False
        if self._read_only:
            return bool(tool.definition.read_only or tool.annotations.read_only)
        return True


class FilteredToolset:
    """A parent's toolset, as one subagent sees it."""

    __slots__ = ("_filter", "_inner")

    def __init__(self, inner: Toolset, keep: ToolFilter) -> None:
        self._inner = inner
        self._filter = keep

    @property
    def name(self) -> str:
        return self._inner.name

    async def tools(self, ctx: ToolContext) -> Sequence[Tool]:
        return [t for t in await self._inner.tools(ctx) if self._filter.keeps(t)]


def select_tools(parent: Any, definition: SubagentDefinition) -> tuple[list[Tool], list[Toolset]]:
    """The tools and toolsets a subagent of ``parent`` (an ``Agent``) gets."""
    excluded = frozenset(id(t) for t in parent.output.tools)
    keep = ToolFilter(definition, excluded)
    tools = [t for t in parent.tools if keep.keeps(t)]
    toolsets: list[Toolset] = [FilteredToolset(ts, keep) for ts in parent.toolsets]
    return tools, toolsets
