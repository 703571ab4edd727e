"""The MCP connector's request shape (beta ``mcp-client-2025-11-20``), checked as the API does.

- ``mcp_servers`` needs the beta flag in ``anthropic-beta`` (without it the field is unknown:
  ``mcp_servers: Extra inputs are not permitted``); so does an ``mcp_toolset`` tool.
- Each server is an object with ``type: "url"``, a string ``url`` and a unique ``name``
  (``mcp_servers.0.url: Field required``); ``authorization_token`` is an optional string.
- Each ``mcp_toolset`` names a declared server, and each server is named by exactly one
  toolset (sim wording for both).

The simulator does not call the servers: replies come from the script (which may hold
``mcp_tool_use`` / ``mcp_tool_result`` blocks, streamed like the API's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dive.testing.anthropic._errors import invalid_request
from dive.testing.anthropic._request import as_dict, as_list

__all__ = ["MCP_BETAS", "check_mcp"]

MCP_BETAS = frozenset({"mcp-client-2025-11-20"})


def _servers(value: object) -> list[str]:
    items = as_list(value)
    if items is None:
        raise invalid_request("mcp_servers: Input should be a valid list")
    names: list[str] = []
    for i, raw in enumerate(items):
        server = as_dict(raw)
        path = f"mcp_servers.{i}"
        if server is None:
            raise invalid_request(f"{path}: Input should be a valid dictionary")
        if server.get("type") != "url":
            raise invalid_request(f"{path}.type: Input should be 'url'")
        for key in ("url", "name"):
            if not isinstance(server.get(key), str) or not server[key]:
                raise invalid_request(f"{path}.{key}: Field required")
        token = server.get("authorization_token")
        if token is not None and not isinstance(token, str):
            raise invalid_request(f"{path}.authorization_token: Input should be a valid string")
        if server["name"] in names:
            raise invalid_request(
                f"mcp_servers: MCP server names must be unique ({server['name']!r})"
            )
        names.append(str(server["name"]))
    return names


def check_mcp(body: Mapping[str, Any], betas: frozenset[str]) -> None:
    """Raise a 400 for a malformed connector request; nothing when it uses no connector."""
    toolsets = [
        (i, t)
        for i, raw in enumerate(as_list(body.get("tools")) or [])
        if (t := as_dict(raw)) is not None and t.get("type") == "mcp_toolset"
    ]
    beta = bool(betas & MCP_BETAS)
    if "mcp_servers" in body and not beta:
        raise invalid_request("mcp_servers: Extra inputs are not permitted")
    if toolsets and not beta:
        i = toolsets[0][0]
        raise invalid_request(f"tools.{i}: mcp_toolset requires the mcp-client-2025-11-20 beta")
    names = _servers(body["mcp_servers"]) if "mcp_servers" in body else []
    used: list[str] = []
    for i, toolset in toolsets:
        name = toolset.get("mcp_server_name")
        if not isinstance(name, str):
            raise invalid_request(f"tools.{i}.mcp_toolset.mcp_server_name: Field required")
        if name not in names:
            raise invalid_request(f"tools.{i}: mcp_toolset references unknown MCP server {name!r}")
        if name in used:
            raise invalid_request(f"tools.{i}: MCP server {name!r} has more than one mcp_toolset")
        used.append(name)
    for name in names:
        if name not in used:
            raise invalid_request(f"MCP server {name!r} is not referenced by any mcp_toolset")
