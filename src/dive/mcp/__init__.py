"""MCP: servers' tools as dive tools, elicitation as a suspension, dive served over MCP.

Install with the ``mcp`` extra (``pip install 'dive-agents[mcp]'``), built on the official MCP
SDK. A server is a ``Toolset``::

    from dive import Agent
    from dive.mcp import MCPServerStdio

    files = MCPServerStdio("files", "python", ["files_server.py"])
    agent = Agent(model=..., toolsets=[files])   # tools: mcp__files__<tool>

See ``docs/mcp.md``: transports, naming and governance, results, list changes, reconnects,
elicitation (suspend and resume across processes), config files, OAuth and ``as_mcp_server``.
"""

try:
    import httpx2 as _httpx2
    import mcp as _mcp
except ImportError as exc:  # pragma: no cover - depends on the install
    from dive.errors import MissingExtraError

    raise MissingExtraError(
        f"dive.mcp needs the mcp extra ({exc}): pip install 'dive-agents[mcp]'"
    ) from exc

from dive.mcp._config import load_config
from dive.mcp._errors import MCPConfigError, MCPConnectionError
from dive.mcp._serve import as_mcp_server
from dive.mcp._server import MCPServer
from dive.mcp._tool import MCPTool
from dive.mcp._transports import MCPServerHTTP, MCPServerSSE, MCPServerStdio

del _mcp, _httpx2

__all__ = [
    "MCPConfigError",
    "MCPConnectionError",
    "MCPServer",
    "MCPServerHTTP",
    "MCPServerSSE",
    "MCPServerStdio",
    "MCPTool",
    "as_mcp_server",
    "load_config",
]

from dive._public import publish as _publish  # noqa: E402

_publish(__name__, globals(), __all__)
