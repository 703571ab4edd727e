"""``mcp_servers`` → Anthropic's MCP connector (beta ``mcp-client-2025-11-20``).

Each checked server (``dive.providers._mcp``) becomes a ``mcp_servers`` entry (``type: url``,
``url``, ``name``, ``authorization_token``) and one ``mcp_toolset`` tool naming it; allowed
tools are the toolset's only enabled ones (``default_config: {enabled: false}`` with a
``configs`` entry per allowed tool). A request with servers goes through the SDK's beta
messages API (``client.beta.messages``), which takes ``mcp_servers`` as a parameter, with the
beta flag in ``anthropic-beta``. The connector's ``mcp_tool_use`` and ``mcp_tool_result``
blocks come back as ``UnknownBlock``s and are replayed verbatim.
"""

from __future__ import annotations

from typing import Any

from dive.llm import ModelSettings
from dive.providers._mcp import RemoteServer, remote_servers

__all__ = ["MCP_BETA", "mcp_connector"]

MCP_BETA = "mcp-client-2025-11-20"

Json = dict[str, Any]


def _toolset(server: RemoteServer) -> Json:
    out: Json = {"type": "mcp_toolset", "mcp_server_name": server.name}
    if not server.enabled:
        out["default_config"] = {"enabled": False}
    elif server.allowed_tools is not None:
        out["default_config"] = {"enabled": False}
        out["configs"] = {name: {"enabled": True} for name in server.allowed_tools}
    return out


def mcp_connector(settings: ModelSettings) -> tuple[list[Json], list[Json]]:
    """The ``mcp_servers`` body field and the ``mcp_toolset`` tools (both empty without any).

    Raises:
        UserError: a malformed ``mcp_servers`` entry.
    """
    servers: list[Json] = []
    toolsets: list[Json] = []
    for server in remote_servers(settings):
        entry: Json = {"type": "url", "url": server.url, "name": server.name}
        if server.authorization_token is not None:
            entry["authorization_token"] = server.authorization_token
        servers.append(entry)
        toolsets.append(_toolset(server))
    return servers, toolsets
