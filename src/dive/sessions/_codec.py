"""Encoding log entries for SQL backends, and decoding them with clear corruption errors."""

from __future__ import annotations

import json
from dataclasses import is_dataclass
from datetime import datetime
from functools import cache, lru_cache
from typing import Any, cast

from dive.errors import MessageValidationError, SessionCorruptedError, UnsupportedSchemaError
from dive.messages.codec import (
    MISSING,
    decode,
    dumps,
    field_defaults,
    format_time,
    to_jsonable,
)
from dive.sessions._log import Compaction, Entry
from dive.turns import SCHEMA_VERSION, SuspensionState, Turn

__all__ = [
    "decode_entry",
    "encode_entry",
    "encode_message",
    "encode_record",
    "encode_scalars",
    "entry_kind",
]


def entry_kind(entry: Entry) -> str:
    """``turn`` or ``compaction``."""
    return "turn" if isinstance(entry, Turn) else "compaction"


_MESSAGES: dict[int, tuple[object, str]] = {}
_RECORDS: dict[object, str] = {}
_CACHE_LIMIT = 8192


def _json(value: Any) -> str:
    return dumps(value)


def _by_identity(obj: object) -> str:
    """JSON of an immutable object, cached by identity.

    Step checkpoints re-encode a turn's earlier messages many times; each is encoded once.
    """
    hit = _MESSAGES.get(id(obj))
    if hit is not None and hit[0] is obj:
        return hit[1]
    text = _json(obj)
    if len(_MESSAGES) >= _CACHE_LIMIT:
        _MESSAGES.clear()
    _MESSAGES[id(obj)] = (obj, text)
    return text


def _by_value(obj: object) -> str:
    try:
        hit = _RECORDS.get(obj)
    except TypeError:  # holds a mapping: not hashable, encode it directly
        return _json(obj)
    if hit is not None:
        return hit
    text = _json(obj)
    if len(_RECORDS) >= _CACHE_LIMIT:
        _RECORDS.clear()
    _RECORDS[obj] = text
    return text


_STAMPED = ("messages", "tool_calls", "revision", "persistence")


def encode_unstamped(turn: Turn) -> str:
    """JSON of a turn without ``revision``/``persistence`` (see :func:`stamp`).

    Done on the caller's thread, before the store's transaction, so the transaction itself
    only splices in the revision.
    """
    return _encode(turn, _STAMPED)


def stamp(unstamped: str, revision: int) -> str:
    """The stored JSON of a turn written at ``revision``."""
    return f'{{"revision":{revision},"persistence":"saved",' + unstamped[1:]


def encode_turn(turn: Turn) -> str:
    """Compact JSON text of a turn; messages and call records come from caches."""
    return _encode(turn, _STAMPED[:2])


def encode_scalars(turn: Turn) -> str:
    """JSON of a turn's small fields: no messages, call records, revision or persistence."""
    return _encode(turn, _STAMPED, lists=False)


def encode_message(message: object) -> str:
    """JSON of one message (cached by identity)."""
    return _by_identity(message)


def encode_record(record: object) -> str:
    """JSON of one tool call record (cached by value)."""
    return _by_value(record)


@cache
def _fields(skip: tuple[str, ...]) -> tuple[tuple[str, Any], ...]:
    return tuple((n, d) for n, d in field_defaults(Turn) if n not in skip)


@cache
def _is_record(tp: type) -> bool:
    return is_dataclass(tp)


# A stored suspended turn holds each of these once: its suspension names the fields it shares
# with the turn (``shared_with_turn``) instead of repeating them; loading fills them back.
_SHARED = (
    ("turn_messages", "messages"),
    ("usage", "usage"),
    ("origin", "origin"),
    ("tool_calls", "tool_calls"),
    ("model_calls", "model_calls"),
    ("executed_tool_calls", "executed_tool_calls"),
    ("iterations", "iterations"),
    ("budget_start", "budget_start"),
)
_SHARED_KEY = "shared_with_turn"
_SLIM_SCHEMA = 2  # the record schema that introduced the shared fields


def _suspension(turn: Turn, suspension: SuspensionState) -> str:
    """The suspension's JSON without what it shares with its turn."""
    shared = [k for k, t in _SHARED if getattr(suspension, k) == getattr(turn, t)]
    data: dict[str, Any] = to_jsonable(suspension)
    for key in shared:
        data.pop(key, None)
    data[_SHARED_KEY] = shared
    return dumps(data)


def _unshare(record: dict[str, Any]) -> dict[str, Any]:
    """A stored turn's suspension with its shared fields filled back from the turn."""
    suspension = record.get("suspension")
    if isinstance(suspension, dict) and _SHARED_KEY in suspension:
        filled = cast(dict[str, Any], suspension)
        names = dict(_SHARED)
        for key in filled.pop(_SHARED_KEY):
            source = names.get(key)
            if source is not None and source in record:
                filled[key] = record[source]
    return record


def _encode(turn: Turn, skip: tuple[str, ...], *, lists: bool = True) -> str:
    plain: dict[str, Any] = {}
    parts: list[str] = []
    for name, default in _fields(skip):
        v: object = getattr(turn, name)
        if default is not MISSING and (v is default or v == default):
            continue
        if isinstance(v, SuspensionState):
            parts.append(f'"suspension":{_suspension(turn, v)}')
            plain["schema"] = _SLIM_SCHEMA  # a dive that reads only schema 1 refuses it
        elif _is_record(type(v)):  # usage, origin…: the same object step after step
            parts.append(f'"{name}":{_by_identity(v)}')
        elif isinstance(v, datetime):
            plain[name] = _time(v)
        else:
            plain[name] = to_jsonable(v)
    if plain:
        parts.insert(0, dumps(plain)[1:-1])
    if not lists:
        return "{" + ",".join(parts) + "}"
    if turn.messages:
        parts.append('"messages":[' + ",".join(_by_identity(m) for m in turn.messages) + "]")
    if turn.tool_calls:
        parts.append('"tool_calls":[' + ",".join(_by_identity(r) for r in turn.tool_calls) + "]")
    return "{" + ",".join(parts) + "}"


@lru_cache(maxsize=256)  # a turn's timestamps are re-encoded at every step
def _time(value: datetime) -> str:
    return format_time(value)


def encode_entry(entry: Entry) -> str:
    """Compact JSON text of an entry."""
    if isinstance(entry, Turn):
        return encode_turn(entry)
    return dumps(entry)


def decode_entry(session_id: str, revision: int, kind: str, data: Any) -> Entry:
    """Decode one stored entry; raise ``SessionCorruptedError`` naming session and revision."""
    try:
        if kind == "turn":
            if isinstance(data, str) and f'"{_SHARED_KEY}"' in data:
                return decode(Turn, _unshare(json.loads(data)))
            return decode(Turn, data)
        if kind == "compaction":
            return decode(Compaction, data)
    except MessageValidationError as exc:
        newer = _newer_schema(data)
        if newer is not None:
            raise UnsupportedSchemaError(
                f"session {session_id!r}: the record written at revision {revision} has schema "
                f"version {newer}, newer than this dive supports ({SCHEMA_VERSION}): a newer "
                "dive wrote it. Upgrade dive-agents to read it; nothing was changed."
            ) from exc
        raise SessionCorruptedError(
            f"session {session_id!r}: the record written at revision {revision} does not "
            f"decode ({exc}); nothing was changed. Restore it from a backup or delete the session."
        ) from exc
    raise SessionCorruptedError(
        f"session {session_id!r}: the record written at revision {revision} has unknown kind "
        f"{kind!r}; nothing was changed"
    )


def _newer_schema(data: Any) -> int | None:
    """The record's schema version if it is newer than this code's (read on failure only)."""
    try:
        record: Any = json.loads(data) if isinstance(data, str | bytes) else data
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    schema = cast(dict[str, Any], record).get("schema")
    if isinstance(schema, int) and not isinstance(schema, bool) and schema > SCHEMA_VERSION:
        return schema
    return None
