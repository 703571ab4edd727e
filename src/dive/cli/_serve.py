"""``dive serve``: the web viewer over a sessions store (the ``viewer`` extra).

The store is the SQLite file (``--db``, default the CLI's) or PostgreSQL (``--dsn``); it is
handed to ``dive.viewer.serve(store, host=..., port=..., agent_factory=...)``, which opens it,
prints the URL (with its access token), blocks until Ctrl-C and closes the store.
``--agent module:factory`` imports ``factory(session_id) -> Agent`` (or an awaitable of
one): with it, a decision made in the viewer resumes the turn at once; without it the
decision is recorded for the process that owns the session. ``--spans FILE`` (exported
OpenTelemetry spans) and ``--model provider:model`` are passed on when given. Without the
viewer installed, one line names the extra to install (exit 2).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dive.cli._errors import EXIT_USAGE, CliError
from dive.errors import MissingExtraError
from dive.sessions import SessionStore

__all__ = ["VIEWER_MISSING", "load_factory", "serve_viewer"]

VIEWER_MISSING = "dive serve needs the viewer: pip install 'dive-agents[viewer]'"


def load_factory(spec: str) -> Callable[..., Any]:
    """Import ``module:factory`` (a usage error naming what is wrong otherwise).

    The current directory is importable, as it is for ``python -m``.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CliError(f"--agent {spec!r}: write it as module:factory", EXIT_USAGE)
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CliError(f"--agent {spec}: cannot import {module_name}: {exc}", EXIT_USAGE) from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise CliError(f"--agent {spec}: {module_name} has no callable {attr}", EXIT_USAGE)
    return factory


def _store(db: Path | None, dsn: str | None) -> SessionStore:
    if dsn is not None:
        from dive.sessions import PostgresSessionStore

        return PostgresSessionStore(dsn)
    from dive.sessions import SQLiteSessionStore

    assert db is not None
    db.parent.mkdir(parents=True, exist_ok=True)
    return SQLiteSessionStore(db)


def _viewer_serve() -> Callable[..., Any]:
    try:
        viewer = importlib.import_module("dive.viewer")
    except ImportError:
        raise CliError(VIEWER_MISSING, EXIT_USAGE) from None
    try:
        serve = getattr(viewer, "serve", None)
    except MissingExtraError:  # dive.viewer imports, its web parts do not
        raise CliError(VIEWER_MISSING, EXIT_USAGE) from None
    if not callable(serve):
        raise CliError(VIEWER_MISSING, EXIT_USAGE)
    return serve


def serve_viewer(
    *,
    db: Path | None,
    dsn: str | None,
    host: str,
    port: int,
    agent: str | None,
    spans: Path | None = None,
    model: str | None = None,
) -> None:
    """Build the store and the agent factory, then hand them to ``dive.viewer.serve``.

    Args:
        db: the SQLite sessions file (when ``dsn`` is None).
        dsn: a PostgreSQL DSN instead.
        host: the interface to bind.
        port: the port (0: a free one).
        agent: ``module:factory`` building the agent for a session id, if any.
        spans: a file of exported OpenTelemetry spans for the trace view, if any.
        model: ``provider:model`` pricing the ideal-caching comparison, if given.

    Raises:
        CliError: the viewer is not installed, or ``agent`` cannot be imported (exit 2).
    """
    serve = _viewer_serve()
    factory = load_factory(agent) if agent is not None else None
    store = _store(db, dsn)
    try:
        extra = {k: v for k, v in {"spans": spans, "model": model}.items() if v is not None}
        out = serve(store, host=host, port=port, agent_factory=factory, **extra)
    except MissingExtraError:
        raise CliError(VIEWER_MISSING, EXIT_USAGE) from None
    if inspect.isawaitable(out):
        asyncio.run(_wait(out))


async def _wait(awaitable: Any) -> None:
    await awaitable
