"""``MCPServer``: an MCP server as a dive ``Toolset``, with one connection owner.

Lifecycle: the first use connects (lazily: the first ``tools()`` before a model call, a
listing, a call); ``async with server:`` connects at once and closes at the end;
``await server.aclose()`` closes. A closed server connects again when used again.

Before every model call the agent asks ``tools()``: the cached list, listed again when the
server said it changed (``notifications/tools/list_changed``; on a 2026-07-28 connection
dive subscribes to it) or after a reconnect. Listing is safe to repeat, so a connection found
dead when listing is reopened and the list asked again; a *call* that loses its connection is
reported as an error result naming the server, never sent again, and the next use reconnects.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Self, TypeVar

from mcp import Client, types
from mcp.client.session import ClientRequestContext, IncomingMessage

from dive.mcp._call import CallSlot, CallSpec, ConnectionLost, call_tool, lost_text
from dive.mcp._connection import Connection, exception_text, log, open_connection
from dive.mcp._elicit import params_json
from dive.mcp._errors import MCPConnectionError
from dive.mcp._names import check_server_name
from dive.mcp._tool import MCPTool
from dive.tools import Tool, ToolContext, ToolOutput, ToolReturn

__all__ = ["MCPServer"]

T = TypeVar("T")

_CLIENT_INFO = types.Implementation(name="dive", version="0.1.0")
_PAGES = 100


class MCPServer(abc.ABC):
    """An MCP server whose tools an agent can call: ``Agent(toolsets=[server])``.

    Subclasses say how to reach it: :class:`MCPServerStdio`, :class:`MCPServerHTTP`,
    :class:`MCPServerSSE`.

    Args:
        name: names the server's tools (``mcp__<name>__<tool>``), its errors and its
            tools' ``origin`` (``mcp:<name>``): letters, digits, ``-`` and single ``_``.
        timeout: seconds allowed to connect, and for each listing or read; tool calls are
            bounded by the tools' own timeouts and the run's ``response_timeout``.
        protocol: ``"auto"`` (the newest protocol the server speaks; 2026-07-28 servers are
            stateless), ``"legacy"`` (the 2025-era initialize handshake), or a protocol
            version string.
    """

    def __init__(
        self,
        name: str,
        *,
        timeout: float = 30.0,
        protocol: Literal["auto", "legacy"] | str = "auto",
    ) -> None:
        self._name = check_server_name(name)
        if not timeout > 0:
            raise ValueError(f"MCP server {name!r}: timeout must be > 0 seconds")
        self.timeout = timeout
        self.protocol = protocol
        self._conn: Connection | None = None
        self._generation = 0
        self._locks: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}
        self._stale = True
        self._tools: tuple[MCPTool, ...] = ()
        self._slots: list[CallSlot] = []

    # --- what subclasses provide --------------------------------------------------------------

    @abc.abstractmethod
    def _target(self) -> Any:
        """What the SDK ``Client`` connects to (stdio parameters or a transport)."""

    @abc.abstractmethod
    def describe(self) -> str:
        """How the server is reached, for messages (a command line or a URL)."""

    def _failure_hint(self) -> str:
        """More about why connecting failed, when the transport knows (an HTTP 401)."""
        return ""

    # --- the Toolset ----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The server's name."""
        return self._name

    @property
    def connected(self) -> bool:
        """True while a connection from the running event loop is open."""
        return self._conn is not None and self._conn.usable()

    @property
    def tools_changed(self) -> bool:
        """True when the tools changed (or were never listed) since they were last listed.

        The server said so, or dive reconnected: the next ``tools()`` lists them again.

        A change notice travels apart from the call that made it (on HTTP, another stream),
        so it can arrive just after that call's result: the model call right after may
        still see the old list, and the next one sees the new.
        """
        return self._stale

    async def tools(self, ctx: ToolContext[Any] | None = None) -> Sequence[Tool]:
        """The server's tools as dive tools (listed again after a change or a reconnect)."""
        conn = await self._connection()
        if self._stale or not self._tools:
            listed = await self._list_tools(conn)
            self._tools = tuple(MCPTool(self, t) for t in listed)
        return self._tools

    async def _list_tools(self, conn: Connection) -> list[types.Tool]:
        self._stale = False  # a change announced while listing marks it stale again
        try:
            return await self._pages(conn, lambda c: conn.client.list_tools(cursor=c), "tools")
        except MCPConnectionError:
            if conn.usable():
                raise
        conn = await self._connection()  # listing again is harmless
        return await self._pages(conn, lambda c: conn.client.list_tools(cursor=c), "tools")

    async def _pages(
        self, conn: Connection, fetch: Callable[[str | None], Awaitable[Any]], what: str
    ) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        for _ in range(_PAGES):
            page = await self._request(conn, fetch(cursor), f"listing {what}")
            items.extend(getattr(page, what))
            cursor = page.next_cursor
            if cursor is None:
                break
        return items

    async def _request(self, conn: Connection, awaitable: Awaitable[T], what: str) -> T:
        try:
            async with asyncio.timeout(self.timeout):
                return await awaitable
        except TimeoutError:
            raise MCPConnectionError(
                f'MCP server "{self.name}" did not answer {what} within {self.timeout:g} s',
                server=self.name,
            ) from None
        except Exception as exc:
            if not conn.usable():
                await self._drop(conn)
            raise MCPConnectionError(
                f'MCP server "{self.name}" failed {what}: {exception_text(exc)}',
                server=self.name,
            ) from exc

    # --- calls ----------------------------------------------------------------------------------

    async def call_tool(
        self, tool: str, arguments: dict[str, Any], ctx: ToolContext[Any] | None = None
    ) -> ToolOutput:
        """Call ``tool`` (its name on the server) with ``arguments``; what the model gets.

        Returns a ``ToolReturn`` (an error result when the server refused, the tool failed
        or the connection was lost during the call) or a ``Suspend`` when the server asks
        for input. Never raises for the server's sake; the call is sent once.

        Args:
            tool: the tool's name on the server (not the ``mcp__`` name).
            arguments: its arguments.
            ctx: the dive tool context (progress goes to it; set by the agent).
        """
        ctx = ctx or ToolContext(tool_call_id="", tool_name=tool, turn_id="")
        try:
            conn = await self._connection()
        except MCPConnectionError as exc:
            return ToolReturn(content=str(exc), is_error=True)
        slot = CallSlot(generation=conn.generation)
        self._slots.append(slot)
        try:
            return await call_tool(conn, CallSpec(self.name, tool, arguments, ctx), slot)
        except ConnectionLost as exc:
            await self._drop(conn)
            return ToolReturn(content=lost_text(self.name, tool, str(exc)), is_error=True)
        finally:
            self._slots.remove(slot)

    # --- prompts and resources --------------------------------------------------------------

    async def list_prompts(self) -> list[types.Prompt]:
        """The server's prompts (``mcp.types.Prompt``: name, description, arguments)."""
        conn = await self._connection()
        return await self._pages(conn, lambda c: conn.client.list_prompts(cursor=c), "prompts")

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None
    ) -> types.GetPromptResult:
        """One prompt rendered by the server with ``arguments``.

        Args:
            name: the prompt's name.
            arguments: the prompt's arguments.
        """
        conn = await self._connection()
        return await self._request(
            conn, conn.client.get_prompt(name, arguments), f"getting prompt {name!r}"
        )

    async def list_resources(self) -> list[types.Resource]:
        """The server's resources (``mcp.types.Resource``: uri, name, mime type)."""
        conn = await self._connection()
        return await self._pages(conn, lambda c: conn.client.list_resources(cursor=c), "resources")

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """The contents of resource ``uri`` (text or base64 blobs, with their mime types).

        Args:
            uri: the resource's URI.
        """
        conn = await self._connection()
        return await self._request(
            conn, conn.client.read_resource(uri), f"reading resource {uri!r}"
        )

    # --- the connection -----------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self._connection()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection (stops a stdio server's process); the next use reopens."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        for other in [k for k in self._locks if k.is_closed()]:
            del self._locks[other]
        return self._locks.setdefault(loop, asyncio.Lock())

    async def _connection(self) -> Connection:
        """The open connection, or a new one.

        A dead one is dropped first: nothing was sent on it by this use, so opening another
        is not a replay.
        """
        conn = self._conn
        if conn is not None and conn.usable():
            return conn
        async with self._lock():
            conn = self._conn
            if conn is not None and conn.usable():
                return conn
            if conn is not None:
                await self._drop(conn)
            self._conn = await self._open()
            return self._conn

    async def _open(self) -> Connection:
        self._generation += 1
        self._stale = True
        try:
            return await open_connection(
                self._generation,
                self._client,
                timeout=self.timeout,
                on_tools_changed=self._tools_changed,
            )
        except TimeoutError:
            raise MCPConnectionError(
                f'MCP server "{self.name}" ({self.describe()}) did not finish connecting '
                f"within {self.timeout:g} s",
                server=self.name,
            ) from None
        except Exception as exc:
            raise MCPConnectionError(
                f'could not connect to MCP server "{self.name}" ({self.describe()}): '
                f"{exception_text(exc)}{self._failure_hint()}",
                server=self.name,
            ) from exc

    async def _drop(self, conn: Connection) -> None:
        """Drop ``conn`` if it is still the current generation (the next use reopens)."""
        if self._conn is conn:
            self._conn = None
            self._stale = True
        await conn.close()

    def _tools_changed(self) -> None:
        self._stale = True

    def _client(self) -> Client:
        gen = self._generation
        return Client(
            self._target(),
            mode=self.protocol,
            elicitation_callback=lambda context, params: self._on_elicit(gen, context, params),
            message_handler=self._on_message,
            client_info=_CLIENT_INFO,
            cache=None,
        )

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._stale = True
        elif isinstance(message, Exception):
            log.debug("MCP server %s: transport error %s", self.name, exception_text(message))

    async def _on_elicit(
        self, generation: int, ctx: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """An older, mid-call elicitation request: a stored answer, or stop and suspend."""
        del ctx
        slots = [s for s in self._slots if s.generation == generation and s.asked is None]
        if len(slots) != 1:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=(
                    "dive answers an elicitation request only while exactly one call to this "
                    f"server is in flight ({len(slots)} are)"
                ),
            )
        request = params_json(params)
        answer = slots[0].take(request)
        if answer is not None:
            return answer
        slots[0].ask(request)
        return types.ErrorData(
            code=types.INVALID_REQUEST,
            message="the client suspended the turn to ask; it will send the call again",
        )
