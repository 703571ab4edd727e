"""An MCP server's tool as a dive tool: name, lossless schema, governance from annotations.

========================  ==================================================================
MCP                       dive
========================  ==================================================================
name                      ``mcp__<server>__<tool>`` (cleaned when it holds other characters)
inputSchema               ``input_schema``, unchanged
description / title       ``description``; ``annotations.title``
readOnlyHint              ``read_only``; ``True`` makes the effect type ``read_only`` (it wins
                          over ``openWorldHint``: a search of the web changes nothing)
destructiveHint           ``destructive``; ``True`` (not read-only) → effect type ``write``
openWorldHint             ``open_world``; ``True`` (not read-only) → ``external_side_effect``
idempotentHint            ``idempotent`` (retries and crash recovery read it)
other annotation keys     ``annotations.extra``
========================  ==================================================================

A hint the server did not set stays unset (``None``), and an effect type nothing implies
stays ``None`` (treated as an external side effect). ``origin`` is ``mcp:<server>``, and the
definition's metadata names the server and the tool as the server calls it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from mcp import types

from dive.mcp._names import dive_tool_name
from dive.messages import EffectType, JSONValue, ToolDefinition
from dive.tools import Tool, ToolAnnotations, ToolContext, ToolOutput

if TYPE_CHECKING:
    from dive.mcp._server import MCPServer

__all__ = ["MCPTool"]

_KNOWN = frozenset({"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"})


def _annotations(tool: types.Tool) -> ToolAnnotations:
    a = tool.annotations
    if a is None:
        return ToolAnnotations(title=tool.title)
    dumped = a.model_dump(by_alias=True, mode="json", exclude_none=True)
    extra = {k: cast(JSONValue, v) for k, v in dumped.items() if k not in _KNOWN}
    return ToolAnnotations(
        title=a.title or tool.title,
        read_only=a.read_only_hint,
        destructive=a.destructive_hint,
        idempotent=a.idempotent_hint,
        open_world=a.open_world_hint,
        extra=extra,
    )


def _effect(hints: ToolAnnotations) -> EffectType | None:
    if hints.read_only:
        return "read_only"
    return hints.effect_type()


class MCPTool(Tool):
    """One tool of an MCP server; calling it sends ``tools/call`` to that server.

    Attributes:
        server_name: the server's name.
        mcp_name: the tool's name as the server knows it.
        mcp_tool: the tool as the server listed it (the SDK's ``mcp.types.Tool``).

    Args:
        server: the server that runs the tool.
        tool: the tool as the server listed it.
    """

    def __init__(self, server: MCPServer, tool: types.Tool) -> None:
        self._server = server
        self.server_name = server.name
        self.mcp_name = tool.name
        self.mcp_tool = tool
        hints = _annotations(tool)
        self.annotations = hints
        self.definition = ToolDefinition(
            name=dive_tool_name(server.name, tool.name),
            description=tool.description or tool.title or "",
            input_schema=cast("dict[str, JSONValue]", tool.input_schema),
            origin=f"mcp:{server.name}",
            tags=frozenset({"mcp"}),
            metadata={"mcp_server": server.name, "mcp_tool": tool.name},
            effect_type=_effect(hints),
            idempotent=bool(hints.idempotent),
        )

    async def call(self, input: Any, ctx: ToolContext[Any]) -> ToolOutput:
        """Send the call to the server (see ``MCPServer.call_tool``)."""
        return await self._server.call_tool(self.mcp_name, dict(input), ctx)
