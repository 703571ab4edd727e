"""Names: a server's name as dive accepts it, and ``mcp__<server>__<tool>`` tool names.

A dive tool name is at most 64 letters, digits, ``_`` or ``-``. An MCP tool name that fits
is kept as it is; one with other characters (``.``, ``/``) or too long is cleaned and given a
short digest of the original, so two MCP tools never share a dive name.
"""

from __future__ import annotations

import hashlib
import re

from dive.mcp._errors import MCPConfigError

__all__ = ["check_server_name", "dive_tool_name"]

_SERVER = re.compile(r"^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX = 64


def check_server_name(name: object, *, source: str = "code") -> str:
    """``name`` when it can name a server's tools, else ``MCPConfigError``."""
    if not isinstance(name, str) or not _SERVER.match(name) or len(name) > 40:
        raise MCPConfigError(
            f"MCP server name {name!r} is invalid: use up to 40 letters, digits, '-' or single "
            "'_' (it becomes part of tool names such as mcp__<server>__<tool>)",
            source=source,
        )
    return name


def dive_tool_name(server: str, tool: str) -> str:
    """The dive name of MCP tool ``tool`` of ``server``: ``mcp__<server>__<tool>``."""
    clean = _UNSAFE.sub("_", tool)
    name = f"mcp__{server}__{clean}"
    if clean == tool and len(name) <= _MAX:
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return f"{name[: _MAX - 9]}_{digest}"
