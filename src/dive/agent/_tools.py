"""Tool resolution before every model call.

Static tools plus every toolset's tools; members declared by a present declarer are left out
of the request (the declarer's own definition is sent) but still dispatch by name. A duplicate
name or a toolset error ends the turn ``error``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dive.agent._run import TurnRun
from dive.errors import DiveError, ToolDefinitionError
from dive.messages import ToolDefinition
from dive.tools import Tool, ToolContext

__all__ = ["ToolResolutionError", "declared_members", "index_tools", "resolve_tools"]


class ToolResolutionError(DiveError):
    """Tools could not be resolved for a model call."""


def index_tools(tools: Iterable[Tool]) -> tuple[dict[str, Tool], tuple[ToolDefinition, ...]]:
    """Map names to tools and list the definitions to send (declared members omitted)."""
    by_name: dict[str, Tool] = {}
    for t in tools:
        if t.name in by_name:
            raise ToolDefinitionError(
                f"two tools are named {t.name!r}; tool names must be unique per agent"
            )
        by_name[t.name] = t
    declared = {m for t in by_name.values() for m in t.declared_tools}
    defs = tuple(t.definition for name, t in by_name.items() if name not in declared)
    return by_name, defs


async def resolve_tools(run: TurnRun) -> tuple[ToolDefinition, ...]:
    """Resolve ``run.tools`` for the next model call and return the definitions to send."""
    agent = run.agent
    if not agent.toolsets:
        run.tools = agent.static_tools
        run.declared_members = agent.declared_members
        return agent.static_definitions
    collected: list[Tool] = list(agent.static_tools.values())
    ctx = ToolContext(
        tool_call_id="",
        tool_name="",
        turn_id=run.turn_id,
        values=run.values,
        session_id=run.session_id,
        agent_name=agent.name,
        cancel=run.cancel,
    )
    for ts in agent.toolsets:
        try:
            found: Sequence[Tool] = await ts.tools(ctx)
        except Exception as exc:
            raise ToolResolutionError(f"tool resolution error: toolset {ts.name}: {exc}") from exc
        collected.extend(found)
    try:
        run.tools, defs = index_tools(collected)
    except ToolDefinitionError as exc:
        raise ToolResolutionError(f"tool resolution error: {exc}") from exc
    run.declared_members = declared_members(run.tools)
    return defs


def declared_members(tools: dict[str, Tool]) -> frozenset[str]:
    """Names declared by a present declarer (their calls halt the batch)."""
    return frozenset(m for t in tools.values() for m in t.declared_tools if m in tools)
