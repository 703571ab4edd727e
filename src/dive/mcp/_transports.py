"""The three ways to reach a server: a local process (stdio), streamable HTTP, legacy SSE."""

from __future__ import annotations

import shlex
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import httpx2
from mcp import StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from dive.mcp._server import MCPServer

__all__ = ["MCPServerHTTP", "MCPServerSSE", "MCPServerStdio"]

_SSE_READ_TIMEOUT = 300.0


class MCPServerStdio(MCPServer):
    """A server run as a local process, spoken to over its stdin and stdout.

    The process starts on first use and stops on ``aclose()`` (or when the event loop that
    started it ends); if it dies, the call it was serving gets an error result and the next
    use starts it again.

    Args:
        name: the server's name (``mcp__<name>__<tool>``).
        command: the executable (looked up on ``PATH``).
        args: its arguments.
        env: extra environment variables, over a minimal inherited set (``HOME``, ``PATH``,
            ``USER``…): the process does not see the rest of dive's environment.
        cwd: its working directory (dive's by default).
        timeout: seconds allowed to start and connect, and for each listing.
        protocol: ``"auto"``, ``"legacy"`` or a protocol version (see ``MCPServer``).
    """

    def __init__(
        self,
        name: str,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        timeout: float = 30.0,
        protocol: Literal["auto", "legacy"] | str = "auto",
    ) -> None:
        super().__init__(name, timeout=timeout, protocol=protocol)
        self.command = command
        self.args = tuple(args)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd

    def _target(self) -> StdioServerParameters:
        return StdioServerParameters(
            command=self.command, args=list(self.args), env=self.env, cwd=self.cwd
        )

    def describe(self) -> str:
        """The command line."""
        return shlex.join([self.command, *self.args])


def _timeout(seconds: float) -> httpx2.Timeout:
    return httpx2.Timeout(seconds, read=_SSE_READ_TIMEOUT)


class MCPServerHTTP(MCPServer):
    """A remote server over streamable HTTP.

    Args:
        name: the server's name (``mcp__<name>__<tool>``).
        url: the MCP endpoint (``https://host/mcp``).
        headers: headers sent with every request (``{"Authorization": "Bearer …"}``).
        auth: an ``httpx2.Auth`` for servers that demand authorization, such as the MCP SDK's
            ``mcp.client.auth.OAuthClientProvider`` (OAuth 2.1 with PKCE: discovery, client
            registration, the authorization redirect, token refresh; its ``TokenStorage``
            keeps the tokens).
        timeout: seconds allowed to connect, and for each listing.
        protocol: ``"auto"``, ``"legacy"`` or a protocol version (see ``MCPServer``).
    """

    def __init__(
        self,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx2.Auth | None = None,
        timeout: float = 30.0,
        protocol: Literal["auto", "legacy"] | str = "auto",
    ) -> None:
        super().__init__(name, timeout=timeout, protocol=protocol)
        self.url = url
        self.headers = dict(headers or {})
        self.auth = auth
        self._refused: int | None = None

    def _target(self) -> Any:
        return self._transport()

    async def _note_status(self, response: httpx2.Response) -> None:
        if response.status_code in (401, 403):
            self._refused = response.status_code
        elif response.is_success:
            self._refused = None

    def _failure_hint(self) -> str:
        if self._refused is None:
            return ""
        return (
            f" (HTTP {self._refused}: the server wants authorization; pass auth=, such as the "
            "MCP SDK's OAuthClientProvider, or an Authorization header in headers=)"
        )

    @asynccontextmanager
    async def _transport(self) -> AsyncGenerator[Any]:
        self._refused = None
        async with (
            httpx2.AsyncClient(
                headers=self.headers,
                auth=self.auth,
                timeout=_timeout(self.timeout),
                event_hooks={"response": [self._note_status]},
            ) as http,
            streamable_http_client(self.url, http_client=http) as streams,
        ):
            yield streams

    def describe(self) -> str:
        """The URL."""
        return self.url


class MCPServerSSE(MCPServer):
    """A legacy server over HTTP with server-sent events (the 2024 transport).

    Args:
        name: the server's name (``mcp__<name>__<tool>``).
        url: the SSE endpoint (``https://host/sse``).
        headers: headers sent with every request.
        auth: an ``httpx2.Auth`` (see ``MCPServerHTTP``).
        timeout: seconds allowed to connect, and for each listing.
        protocol: ``"auto"``, ``"legacy"`` or a protocol version (see ``MCPServer``).
    """

    def __init__(
        self,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx2.Auth | None = None,
        timeout: float = 30.0,
        protocol: Literal["auto", "legacy"] | str = "auto",
    ) -> None:
        super().__init__(name, timeout=timeout, protocol=protocol)
        self.url = url
        self.headers = dict(headers or {})
        self.auth = auth

    def _target(self) -> Any:
        return sse_client(
            self.url,
            headers=self.headers,
            timeout=self.timeout,
            sse_read_timeout=_SSE_READ_TIMEOUT,
            auth=self.auth,
        )

    def describe(self) -> str:
        """The URL."""
        return self.url
