"""The MCP client's errors: a configuration it cannot use, a server it cannot reach.

A failure *during a tool call* is never raised: the call gets an error result naming the
server (the model sees it, the turn goes on). These are raised by what runs outside a call:
``load_config``, constructing a server, connecting, listing tools before a model call (the
turn then ends ``error`` with the message), ``list_prompts`` and ``read_resource``.
"""

from __future__ import annotations

from dive.errors import DiveError, UserError

__all__ = ["MCPConfigError", "MCPConnectionError"]


class MCPConfigError(UserError):
    """An MCP server definition or config file dive cannot use.

    Attributes:
        source: the config file (or ``code``) that held it.

    Args:
        message: what is wrong and how to fix it.
        source: the config file (or ``code``) that held it.
    """

    def __init__(self, message: str, *, source: str = "code") -> None:
        super().__init__(message)
        self.source = source


class MCPConnectionError(DiveError):
    """An MCP server could not be reached, or refused a request outside a tool call.

    Attributes:
        server: the server's name.

    Args:
        message: what failed and what to do.
        server: the server's name.
    """

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server
