"""The SQLite store's inline connection: small writes and loads on the caller's thread.

A step append is a few microseconds of SQLite work; handing it to the worker thread costs
more than the write (and a thread hop wakes the event loop twice). With
``synchronous="normal"`` (no sync to disk on commit) the store tries step appends, turn
records up to ``INLINE_RECORD_CHARS`` and session loads here first, on a second connection
that never waits for a lock: when another connection holds the write lock, or another
thread is using this one, the attempt gives up before changing anything and the operation
goes to the worker thread as usual. (Encoding and decoding are Python work either way: on
the worker thread they hold the same interpreter lock.)

WAL checkpoints (copying the log into the database, which syncs to disk) never run here:
every ``CHECKPOINT_EVERY`` inline commits one is posted to the worker thread.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from dive.sessions._sqlite_faults import is_busy
from dive.sessions._sqlite_worker import Worker

__all__ = ["CHECKPOINT_EVERY", "INLINE_RECORD_CHARS", "InlineWriter"]

T = TypeVar("T")

CHECKPOINT_EVERY = 200
"""Inline commits between two passive WAL checkpoints posted to the worker thread."""

INLINE_RECORD_CHARS = 256 * 1024
"""The largest turn record (JSON characters) written inline; larger ones go to the worker."""


class InlineWriter:
    """A non-waiting connection for small writes, used by one thread at a time."""

    def __init__(
        self, path: Path, worker: Worker, main: Callable[[], sqlite3.Connection | None]
    ) -> None:
        self._path = path
        self._worker = worker
        self._main = main
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._commits = 0
        self._closed = False

    def try_write(self, transact: Callable[[sqlite3.Connection], T]) -> tuple[bool, T | None]:
        """``(True, result)`` when ``transact`` ran and committed here, else ``(False, None)``.

        ``transact`` runs one whole transaction on the connection it is given. Errors other
        than "the database is locked" propagate (nothing was committed).
        """
        if self._closed or not self._lock.acquire(blocking=False):
            return False, None
        try:
            conn = self._connection()
            try:
                out = transact(conn)
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                if conn.in_transaction:
                    conn.rollback()
                return False, None
            self._commits += 1
            if self._commits % CHECKPOINT_EVERY == 0:
                self._worker.post(self._passive_checkpoint)
            return True, out
        finally:
            self._lock.release()

    def try_read(self, read: Callable[[sqlite3.Connection], T]) -> tuple[bool, T | None]:
        """``(True, result)`` when ``read`` ran here without waiting, else ``(False, None)``.

        ``read`` opens its own read transaction when it needs a consistent snapshot.
        """
        if self._closed or not self._lock.acquire(blocking=False):
            return False, None
        try:
            conn = self._connection()
            try:
                try:
                    out = read(conn)
                finally:
                    if conn.in_transaction:
                        conn.rollback()
            except sqlite3.OperationalError as exc:
                if not is_busy(exc):
                    raise
                return False, None
            return True, out
        finally:
            self._lock.release()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(
                self._path, isolation_level=None, check_same_thread=False, timeout=0
            )
            conn.execute("PRAGMA busy_timeout=0")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA wal_autocheckpoint=0")
            self._conn = conn
        return self._conn

    def _passive_checkpoint(self) -> None:
        conn = self._main()
        if conn is None:
            return
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error:
            pass  # a later checkpoint (or the main connection's automatic one) catches up

    def close(self) -> None:
        """Close the connection (waits for a write in progress on another thread)."""
        with self._lock:
            self._closed = True
            if self._conn is not None:
                conn, self._conn = self._conn, None
                conn.close()
