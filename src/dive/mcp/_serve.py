"""``as_mcp_server``: dive tools, or a whole agent, served to other MCP clients.

The result is the SDK's ``mcp.server.mcpserver.MCPServer`` (a subclass whose tool listing and
calls go to dive), so it runs as any SDK server does: ``server.run()`` on stdio,
``server.run("streamable-http", port=...)`` or ``server.streamable_http_app()`` over HTTP.

Schemas are served exactly as dive has them. A tool that suspends (or an agent turn that
suspends: a question, an approval) asks the client: on a 2026-07-28 connection with an
input-required result whose sealed ``request_state`` carries everything needed to go on (so
any server process with the same key can take the answer; nothing waits in memory), on an
older connection with an elicitation request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from mcp import types
from mcp.server.mcpserver import Context
from mcp.server.mcpserver import MCPServer as SDKServer

from dive.mcp._served import AgentEntry, Ask, Entry, ToolEntry
from dive.tools import FunctionTool, Tool, ToolContext, ToolProgressEvent

if TYPE_CHECKING:
    from dive.agent import Agent

__all__ = ["as_mcp_server"]

_STATE_VERSION = 1
_MAX_ROUNDS = 10


def _tool(t: Tool | Callable[..., Any]) -> Tool:
    return t if isinstance(t, Tool) else FunctionTool.from_function(t)


class _DiveServer(SDKServer[Any]):
    """An SDK server whose tools are dive's."""

    def __init__(self, name: str, entries: Sequence[Entry], options: Mapping[str, Any]) -> None:
        settings: dict[str, Any] = {"log_level": "WARNING", **options}
        super().__init__(name, **settings)
        self._entries = {e.definition.name: e for e in entries}
        if len(self._entries) != len(entries):
            raise ValueError("two served tools have the same name; tool names must be unique")

    async def list_tools(self) -> list[types.Tool]:
        """The dive tools, schemas as dive has them."""
        return [e.definition for e in self._entries.values()]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Run a dive tool (or the agent); a suspension asks the client."""
        entry = self._entries.get(name)
        if entry is None:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"Unknown tool: {name}")],
                is_error=True,
            )
        ctx = _tool_context(name, context)
        state = _state(context)
        if state is None:
            outcome = await entry.start(dict(arguments), ctx)
        else:
            answers = _answers(context)
            outcome = await entry.resume(state, answers, ctx)
        for _ in range(_MAX_ROUNDS):
            if not isinstance(outcome, Ask):
                return outcome
            if context is None or _modern(context):
                return types.InputRequiredResult(
                    input_requests=cast("dict[str, types.InputRequest]", outcome.requests),
                    request_state=json.dumps({"v": _STATE_VERSION, "state": outcome.state}),
                )
            answers = await _ask_now(context, outcome)  # a 2025-era client: ask and wait
            outcome = await entry.resume(outcome.state, answers, ctx)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="too many questions in one call")],
            is_error=True,
        )


def _modern(context: Context[Any, Any]) -> bool:
    return (context.protocol_version or "").startswith("2026")


def _state(context: Context[Any, Any] | None) -> Mapping[str, Any] | None:
    raw = context.request_state if context is not None else None
    if not raw:
        return None
    data = json.loads(raw)
    if not isinstance(data, dict) or cast("dict[str, Any]", data).get("v") != _STATE_VERSION:
        raise ValueError("request state from another version of this server")
    return cast("dict[str, Any]", data)["state"]


def _answers(context: Context[Any, Any] | None) -> dict[str, types.ElicitResult]:
    responses = (context.input_responses if context is not None else None) or {}
    return {k: v for k, v in responses.items() if isinstance(v, types.ElicitResult)}


async def _ask_now(context: Context[Any, Any], ask: Ask) -> dict[str, types.ElicitResult]:
    session = context.session
    answers: dict[str, types.ElicitResult] = {}
    for key, request in ask.requests.items():
        params = request.params
        if isinstance(params, types.ElicitRequestURLParams):
            answers[key] = await session.elicit_url(
                params.message, params.url, params.elicitation_id or key, context.request_id
            )
        else:
            answers[key] = await session.elicit_form(
                params.message, params.requested_schema, context.request_id
            )
    return answers


def _tool_context(name: str, context: Context[Any, Any] | None) -> ToolContext[Any]:
    request_id = context.request_id if context is not None else "local"
    count = 0

    async def emit(event: Any) -> None:
        nonlocal count
        if context is not None and isinstance(event, ToolProgressEvent):
            count += 1
            await context.report_progress(count, None, event.display)

    return ToolContext(
        tool_call_id=f"mcp-{request_id}", tool_name=name, turn_id=f"mcp-{request_id}", emit=emit
    )


def as_mcp_server(
    tools_or_agent: Agent[Any, Any] | Sequence[Tool | Callable[..., Any]],
    *,
    name: str,
    **options: Any,
) -> SDKServer[Any]:
    """Serve dive tools, or an agent as one tool, to MCP clients.

    Args:
        tools_or_agent: dive tools (or plain functions, made tools as ``@tool`` makes them),
            each served under its own name; or an ``Agent``, served as one tool named after
            the agent (``name`` when it has none) taking ``{"prompt": "..."}`` and answering
            with the turn's output. Each call is a stateless turn.
        name: the server's name (what clients see, and the audience its sealed state is
            bound to).
        **options: keyword arguments of the SDK's ``MCPServer``: ``instructions``, ``auth``
            and ``token_verifier``, ``request_state_security`` (shared keys, so that an answer
            reaches any instance: by default the state is sealed with a per-process key)…

    Returns:
        The SDK's ``MCPServer``: ``.run()`` serves it on stdio, ``.run("streamable-http",
        host=..., port=...)`` or ``.streamable_http_app()`` over HTTP.
    """
    from dive.agent import Agent

    if isinstance(tools_or_agent, Agent):
        agent = tools_or_agent
        tool_name = agent.name if agent.name and agent.name.isidentifier() else name
        entries: list[Entry] = [AgentEntry(agent, tool_name)]
    else:
        entries = [ToolEntry(_tool(t)) for t in tools_or_agent]
    return _DiveServer(name, entries, options)
