"""``serve(store, ...)``: run the viewer with uvicorn until interrupted.

The socket is bound and listening before the URL is printed (``dive viewer: http://…/?token=…``
on the first stdout line), so whoever reads that line can connect at once, port 0 included.
The store is opened first when it has an ``open()`` (PostgreSQL) and closed on the way out.
Only ``127.0.0.1`` unless ``host`` says otherwise.
"""

from __future__ import annotations

import asyncio
import inspect
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import uvicorn

from dive.sessions import SessionStore
from dive.viewer._app import app
from dive.viewer._live import Changes
from dive.viewer._resume import AgentFactory

__all__ = ["serve", "viewer_url"]


def viewer_url(host: str, port: int, token: str) -> str:
    """The URL to open (IPv6 hosts in brackets)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def serve_async(
    store: SessionStore,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    agent_factory: AgentFactory | None = None,
    spans: str | Path | None = None,
    model: str | None = None,
    out: TextIO | None = None,
    ready: Callable[[str, uvicorn.Server], None] | None = None,
) -> None:
    """``serve`` inside a running event loop (see ``serve``).

    ``out`` is where the URL line goes (stdout); ``ready(url, server)`` is called once the
    socket listens (set ``server.should_exit`` to stop it from another thread).
    """
    opener = getattr(store, "open", None)
    if callable(opener):
        store = await _maybe(opener()) or store
    try:
        web = app(store, token=token, agent_factory=agent_factory, spans=spans, model=model)
        sock = _listen(host, port)
        url = viewer_url(host, sock.getsockname()[1], web.state.viewer.token)
        print(f"dive viewer: {url}", file=out or sys.stdout, flush=True)
        config = uvicorn.Config(
            web, log_level="warning", access_log=False, timeout_graceful_shutdown=2
        )
        server = uvicorn.Server(config)
        if ready is not None:
            ready(url, server)
        watcher = asyncio.create_task(_end_streams_on_exit(server, web.state.viewer.changes))
        try:
            await server.serve(sockets=[sock])
        finally:
            watcher.cancel()
    finally:
        closer = getattr(store, "close", None)
        if callable(closer):
            await _maybe(closer())


async def _end_streams_on_exit(server: uvicorn.Server, changes: Changes) -> None:
    """Once uvicorn is asked to stop (a signal, ``should_exit``), end the event streams."""
    while not server.should_exit:  # noqa: ASYNC110 (uvicorn offers a flag, not an event)
        await asyncio.sleep(0.1)
    changes.close()


def serve(
    store: SessionStore,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    agent_factory: AgentFactory | None = None,
    spans: str | Path | None = None,
    model: str | None = None,
) -> None:
    """Serve the viewer over ``store`` until Ctrl-C (or SIGTERM); prints the URL first.

    Args:
        store: any session store; opened if it has ``open()``, closed at the end.
        host: the interface (``127.0.0.1`` by default; another only when asked).
        port: the port (0: a free one, printed in the URL).
        token: the access token (None: a random one).
        agent_factory: ``factory(session_id) -> Agent`` to resume turns here.
        spans: a file of exported OpenTelemetry spans for the trace view.
        model: ``provider:model`` for the ideal-caching price.
    """
    asyncio.run(
        serve_async(
            store,
            host=host,
            port=port,
            token=token,
            agent_factory=agent_factory,
            spans=spans,
            model=model,
        )
    )
