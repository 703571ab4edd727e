"""Step deltas: a running turn's checkpoint as only what it added since the last write.

The SQL backends remember, per session, what this process last wrote for the open turn
(:class:`Written`). When the next checkpoint of that turn is still ``running`` and the session
is still at the remembered revision (checked inside the write's transaction, so another
process's write forces a full record), the backend appends a small step row instead of
rewriting the turn: how many messages to keep, the new messages, the call records that
changed and the turn's small fields. Loading applies the steps to the last full record
(:func:`materialise`); a write with any other status rewrites the full record and drops the
steps.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from dive.errors import SessionCorruptedError
from dive.messages import Message
from dive.sessions._codec import decode_entry, encode_message, encode_record, encode_scalars
from dive.sessions._log import Entry
from dive.turns import ToolCallRecord, Turn

__all__ = ["COMPACT_EVERY", "Delta", "Written", "decode_row", "delta", "materialise"]

COMPACT_EVERY = 1000
"""Steps after which a checkpoint writes the full record again (bounds recovery work)."""


@dataclass(frozen=True, slots=True)
class Written:
    """What this process last wrote for a session's open, running turn."""

    seq: int
    turn_id: str
    revision: int
    messages: tuple[Message, ...]
    tool_calls: tuple[ToolCallRecord, ...]
    steps: int

    @staticmethod
    def after(seq: int, turn: Turn, revision: int, steps: int) -> Written | None:
        """The memory of a write, or None when the turn is not running (no steps follow)."""
        if turn.status != "running":
            return None
        return Written(seq, turn.id, revision, turn.messages, turn.tool_calls, steps)


@dataclass(frozen=True, slots=True)
class Delta:
    """A step row to append, valid only while the session is at ``base.revision``."""

    base: Written
    data: str

    def written(self, revision: int, turn: Turn) -> Written:
        """The memory once this step is stored at ``revision``."""
        b = self.base
        return Written(b.seq, b.turn_id, revision, turn.messages, turn.tool_calls, b.steps + 1)


def _kept(old: Sequence[object], new: Sequence[object]) -> int:
    """How many leading items ``new`` shares with ``old`` (identity first, then equality)."""
    n = min(len(old), len(new))
    if tuple(old[:n]) == tuple(new[:n]):  # the usual case, compared in C (identity first)
        return n
    i = 0
    while i < n and old[i] is new[i]:
        i += 1
    while i < n and old[i] == new[i]:
        i += 1
    return i


def delta(written: Written | None, turn: Turn) -> Delta | None:
    """The step that takes ``written`` to ``turn``, or None when a full record is needed."""
    if (
        written is None
        or turn.status != "running"
        or turn.id != written.turn_id
        or written.steps >= COMPACT_EVERY
    ):
        return None
    keep = _kept(written.messages, turn.messages)
    old = written.tool_calls
    new = turn.tool_calls
    shared = min(len(old), len(new))
    calls = [
        f"[{i},{encode_record(r)}]"
        for i, (o, r) in enumerate(zip(old, new, strict=False))
        if o is not r and o != r
    ]
    calls += [f"[{i},{encode_record(new[i])}]" for i in range(shared, len(new))]
    messages = ",".join(encode_message(m) for m in turn.messages[keep:])
    data = (
        f'{{"keep":{keep},"messages":[{messages}],"ncalls":{len(turn.tool_calls)},'
        f'"calls":[{",".join(calls)}],"turn":{encode_scalars(turn)}}}'
    )
    return Delta(written, data)


def materialise(
    session_id: str, base_revision: int, base: str, steps: Sequence[tuple[int, str]]
) -> Any:
    """The record (plain data) of a turn: ``base`` with ``steps`` (revision, data) applied.

    Raises ``SessionCorruptedError`` naming the session and revision when a row is unreadable.
    """
    revision = base_revision
    try:
        record = cast(dict[str, Any], json.loads(base))
        messages = list(cast(list[Any], record.get("messages", [])))
        calls = list(cast(list[Any], record.get("tool_calls", [])))
        for rev, text in steps:
            revision = rev
            step = cast(dict[str, Any], json.loads(text))
            del messages[int(step["keep"]) :]
            messages.extend(cast(list[Any], step["messages"]))
            del calls[int(step["ncalls"]) :]
            for i, rec in cast(list[list[Any]], step["calls"]):
                if i < len(calls):
                    calls[i] = rec
                elif i == len(calls):
                    calls.append(rec)
                else:
                    raise ValueError(f"call record {i} follows {len(calls)} records")
            record = dict(cast(dict[str, Any], step["turn"]))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise SessionCorruptedError(
            f"session {session_id!r}: the step written at revision {revision} does not decode "
            f"({exc!r}); nothing was changed. Restore it from a backup or delete the session."
        ) from exc
    if messages:
        record["messages"] = messages
    if calls:
        record["tool_calls"] = calls
    record["revision"] = revision
    record["persistence"] = "saved"
    return record


def decode_row(
    session_id: str, revision: int, kind: str, data: str, steps: Sequence[tuple[int, str]]
) -> Entry:
    """Decode a stored entry, applying its steps (``(revision, data)``, in order) if any."""
    if not steps:
        return decode_entry(session_id, revision, kind, data)
    record = materialise(session_id, revision, data, steps)
    return decode_entry(session_id, steps[-1][0], kind, record)
