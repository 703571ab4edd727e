"""Per-session in-process locks.

One lock per session id; a run holds it from load to its final write. A re-entrant run on the
same session — from a tool, hook or subagent of the run holding it — raises
``ReentrantSessionError`` instead of deadlocking. Unused entries are freed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from contextvars import ContextVar

from dive.errors import ReentrantSessionError

__all__ = ["session_lock"]

_locks: dict[str, tuple[asyncio.Lock, int]] = {}
_held: ContextVar[frozenset[str]] = ContextVar("dive_held_sessions", default=frozenset())


@asynccontextmanager
async def session_lock(session_id: str) -> AsyncGenerator[None]:
    """Hold the in-process lock of ``session_id`` (for out-of-band edits too).

    Args:
        session_id: the session to lock.
    """
    if session_id in _held.get():
        raise ReentrantSessionError(
            f"a run on session {session_id!r} was started from inside a run on the same "
            "session (a tool, hook or subagent); use another session or run it afterwards"
        )
    lock, users = _locks.get(session_id, (None, 0))
    if lock is None:
        lock = asyncio.Lock()
    _locks[session_id] = (lock, users + 1)
    token = None
    try:
        await lock.acquire()
        try:
            token = _held.set(_held.get() | {session_id})
            yield
        finally:
            if token is not None:
                _held.reset(token)
            lock.release()
    finally:
        lock_now, n = _locks[session_id]
        if n <= 1:
            del _locks[session_id]
        else:
            _locks[session_id] = (lock_now, n - 1)
