"""``dive serve``: the web viewer over a sessions store (the ``viewer`` extra).

The store is the SQLite file (``--db``, default the CLI's) or PostgreSQL (``--dsn``);
``--agent module:factory`` imports a function returning the :class:`~dive.Agent` the viewer
resumes turns with. ``dive.viewer.serve`` prints the URL and blocks.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dive.cli._errors import EXIT_USAGE, CliError

__all__ = ["load_factory", "serve_viewer"]

VIEWER_MISSING = "the viewer is not installed: pip install 'dive-agents[viewer]'"


def load_factory(spec: str) -> Callable[..., Any]:
    """Import ``module:factory`` (a usage error naming what is wrong otherwise)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CliError(f"--agent {spec!r}: write it as module:factory", EXIT_USAGE)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CliError(f"--agent {spec}: cannot import {module_name}: {exc}", EXIT_USAGE) from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise CliError(f"--agent {spec}: {module_name} has no callable {attr}", EXIT_USAGE)
    return factory


def _store(db: Path | None, dsn: str | None) -> Any:
    if dsn is not None:
        from dive.sessions import PostgresSessionStore

        return PostgresSessionStore(dsn)
    from dive.sessions import SQLiteSessionStore

    assert db is not None
    db.parent.mkdir(parents=True, exist_ok=True)
    return SQLiteSessionStore(db)


def serve_viewer(
    *, db: Path | None, dsn: str | None, host: str, port: int, agent: str | None
) -> None:
    """Build the store and the agent factory, then hand them to ``dive.viewer.serve``."""
    try:
        viewer = importlib.import_module("dive.viewer")
    except ImportError:
        raise CliError(VIEWER_MISSING, EXIT_USAGE) from None
    factory = load_factory(agent) if agent is not None else None
    store = _store(db, dsn)
    serve: Callable[..., Any] = viewer.serve
    out = serve(store, host=host, port=port, agent_factory=factory)
    if inspect.isawaitable(out):
        asyncio.run(_wait(out))


async def _wait(awaitable: Any) -> None:
    await awaitable
