"""What goes wrong under an SQLite store, said in dive's terms.

Driver errors become ``StoreError`` subclasses that name the file and the session (the
driver's exception stays the cause). The opened file's identity (device and inode) is kept so
that a file deleted or replaced behind the store's back is refused instead of written into.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from dive.errors import (
    StoreCorruptedError,
    StoreError,
    StoreFileReplacedError,
    StoreUnavailableError,
)

__all__ = ["FileIdentity", "Where", "is_busy", "translate"]

# primary SQLite result codes (the low byte of an extended code)
_PERM, _BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT = 3, 5, 6, 8, 10, 11
_FULL, _CANTOPEN, _NOTADB = 13, 14, 26


def _code(exc: sqlite3.Error) -> int | None:
    code: int | None = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def is_busy(exc: sqlite3.Error) -> bool:
    """True when the database was locked by another connection (worth waiting for)."""
    return _code(exc) in (_BUSY, _LOCKED) or "database is locked" in str(exc)


@dataclass(frozen=True, slots=True)
class Where:
    """What an operation was doing, for error messages."""

    path: Path
    doing: str
    session: str | None = None

    @property
    def subject(self) -> str:
        what = f"{self.doing} session {self.session!r}" if self.session else self.doing
        return f"SQLite session store {self.path}: {what}"


def translate(exc: sqlite3.Error, where: Where, busy_timeout: float) -> StoreError:
    """The ``StoreError`` subclass to raise (``from exc``) for a driver error."""
    code = _code(exc)
    head = f"{where.subject} failed ({exc})"
    if code in (_CORRUPT, _NOTADB):
        return StoreCorruptedError(
            f"{head}: the file is not a readable dive session database (damaged or "
            "overwritten); nothing was written to it. Restore it from a backup, or move it "
            "aside to start a new store."
        )
    if is_busy(exc):
        return StoreUnavailableError(
            f"{head}: another connection kept the database locked for longer than "
            f"busy_timeout={busy_timeout:g} s; nothing was written. Retry once the other "
            "writer is done, or open the store with a larger busy_timeout."
        )
    if code == _FULL:
        return StoreUnavailableError(
            f"{head}: the disk (or the database's size limit) is full; the transaction was "
            "rolled back. Free some space and retry."
        )
    if code in (_PERM, _READONLY, _CANTOPEN):
        return StoreUnavailableError(
            f"{head}: the file cannot be opened or written (permissions, a read-only file "
            "system or a missing folder). Fix access to the file and retry."
        )
    if code == _IOERR:
        return StoreUnavailableError(
            f"{head}: an I/O error; whether the write landed is unknown. Check the disk and "
            "the file system, then reload the session and retry."
        )
    return StoreError(f"{head}: unexpected {type(exc).__name__}; reload the session and retry.")


@dataclass(frozen=True, slots=True)
class FileIdentity:
    """The device and inode of the file a store opened."""

    device: int
    inode: int

    @staticmethod
    def of(path: Path, where: Where) -> FileIdentity | None:
        """The identity of the file now at ``path``; None if there is none."""
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise StoreUnavailableError(
                f"{where.subject} failed: cannot inspect the file ({exc}); nothing was "
                "written. Fix access to the file and retry."
            ) from exc
        return FileIdentity(st.st_dev, st.st_ino)

    def check(self, path: Path, where: Where) -> None:
        """Raise ``StoreFileReplacedError`` unless ``path`` is still the opened file."""
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if st is not None and st.st_ino == self.inode and st.st_dev == self.device:
            return
        now = FileIdentity.of(path, where)
        if now == self:
            return
        what = "deleted" if now is None else "replaced by another file"
        raise StoreFileReplacedError(
            f"{where.subject} refused: the file was {what} while this store had it open, so "
            "nothing can be read from or written to the data at that path through this "
            "store; nothing was written. Close this store and open a new one on the path "
            "(restore the file from a backup if it was removed by mistake)."
        )
