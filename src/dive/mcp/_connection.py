"""One connection to an MCP server, owned by one task.

The SDK's ``Client`` holds anyio task groups that must be left by the task that entered
them, so each connection gets an *owner* task: it enters the client, hands it over, waits to
be told to stop, and leaves it (closing stdin and reaping a stdio process, ending an HTTP
session). Calls run on the callers' tasks through the entered client.

Each connection has a *generation*. A call that finds its connection dead drops exactly the
generation it ran on (never a newer one another caller already opened) and the next use
opens a new one; the failed call is reported, never sent again. A connection belongs to the
event loop that opened it: a later ``asyncio.run`` (``run_sync``) opens its own.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp import Client

__all__ = ["Connection", "exception_text", "open_connection"]

log = logging.getLogger("dive.mcp")

_CLOSE_TIMEOUT = 10.0


@dataclass(eq=False)
class Connection:
    """An entered SDK client and its owner task."""

    generation: int
    client: Client
    loop: asyncio.AbstractEventLoop
    task: asyncio.Task[None]
    stop: asyncio.Event
    listener: asyncio.Task[None] | None = field(default=None)

    @property
    def modern(self) -> bool:
        """True on a 2026-07-28 (stateless) connection."""
        return self.client.protocol_version.startswith("2026")

    def usable(self) -> bool:
        """True while this connection can carry a request from the running loop."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - only called from coroutines
            return False
        if loop is not self.loop or self.task.done():
            return False
        dispatcher = getattr(self.client.session, "_dispatcher", None)
        return not getattr(dispatcher, "_closed", False)  # EOF seen (a stdio server exited)

    async def close(self) -> None:
        """Tell the owner to leave the client, and wait (bounded) until it has."""
        if asyncio.get_running_loop() is not self.loop:
            return  # its loop ended (and cancelled the owner, which closed the client)
        if self.listener is not None:
            self.listener.cancel()
        self.stop.set()
        if self.task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(self.task), _CLOSE_TIMEOUT)
        except TimeoutError:
            self.task.cancel()
        except Exception:  # pragma: no cover - the owner logs its own failures
            pass


def exception_text(exc: BaseException) -> str:
    """A one-line reason, looking inside exception groups."""
    current = _innermost(exc)
    text = str(current).strip()
    name = type(current).__name__
    return f"{name}: {text}" if text else name


def _innermost(exc: BaseException) -> BaseException:
    inner: Sequence[Any] = getattr(exc, "exceptions", None) or ()
    first: Any = inner[0] if inner else None
    return _innermost(first) if isinstance(first, BaseException) else exc


async def _own(
    make_client: Callable[[], Client],
    ready: asyncio.Future[Client],
    stop: asyncio.Event,
) -> None:
    try:
        async with make_client() as client:
            if not ready.done():
                ready.set_result(client)
            await stop.wait()
    except BaseException as exc:
        if not ready.done():
            ready.set_exception(exc if isinstance(exc, Exception) else ConnectionError(str(exc)))
            if not isinstance(exc, Exception):
                raise
            return
        if not isinstance(exc, Exception):
            raise
        log.debug("MCP connection ended with %s", exception_text(exc))


async def _listen(client: Client, on_change: Callable[[], None]) -> None:
    """Subscribe to ``tools/list_changed`` (2026-07-28 servers send it only to subscribers)."""
    try:
        async with client.listen(tools_list_changed=True) as sub:
            async for _event in sub:
                on_change()
    except Exception as exc:  # not offered, or the connection ended: nothing to refresh on
        log.debug("MCP list-changed subscription ended: %s", exception_text(exc))


async def open_connection(
    generation: int,
    make_client: Callable[[], Client],
    *,
    timeout: float,  # noqa: ASYNC109 - it bounds the handshake only, not the connection
    on_tools_changed: Callable[[], None],
) -> Connection:
    """Start an owner task and wait until its client is connected.

    Raises:
        TimeoutError: the server did not finish connecting within ``timeout`` seconds.
        Exception: whatever connecting raised (the caller names the server).
    """
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[Client] = loop.create_future()
    stop = asyncio.Event()
    task = loop.create_task(_own(make_client, ready, stop), name=f"dive-mcp-{generation}")
    try:
        client = await asyncio.wait_for(asyncio.shield(ready), timeout)
    except BaseException:
        stop.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise
    conn = Connection(generation=generation, client=client, loop=loop, task=task, stop=stop)
    if conn.modern and _lists_changes(client):
        listener = loop.create_task(_listen(client, on_tools_changed))
        conn.listener = listener
        task.add_done_callback(lambda _: listener.cancel())
    return conn


def _lists_changes(client: Client) -> bool:
    tools = client.server_capabilities.tools
    return tools is not None and bool(tools.list_changed)
