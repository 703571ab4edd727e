"""Encoding log entries for SQL backends, and decoding them with clear corruption errors."""

from __future__ import annotations

from typing import Any

from dive.agent._records import Turn
from dive.errors import MessageValidationError, SessionCorruptedError
from dive.messages._codec import decode, dumps
from dive.sessions._log import Compaction, Entry

__all__ = ["decode_entry", "encode_entry", "entry_kind"]


def entry_kind(entry: Entry) -> str:
    """``turn`` or ``compaction``."""
    return "turn" if isinstance(entry, Turn) else "compaction"


def encode_entry(entry: Entry) -> str:
    """Compact JSON text of an entry."""
    return dumps(entry)


def decode_entry(session_id: str, revision: int, kind: str, data: Any) -> Entry:
    """Decode one stored entry; raise ``SessionCorruptedError`` naming session and revision."""
    try:
        if kind == "turn":
            return decode(Turn, data)
        if kind == "compaction":
            return decode(Compaction, data)
    except MessageValidationError as exc:
        raise SessionCorruptedError(
            f"session {session_id!r}: the record written at revision {revision} does not "
            f"decode ({exc}); nothing was changed. Restore it from a backup or delete the session."
        ) from exc
    raise SessionCorruptedError(
        f"session {session_id!r}: the record written at revision {revision} has unknown kind "
        f"{kind!r}; nothing was changed"
    )
