"""``MemorySessionStore``: in-process, for tests and short-lived services."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from dive.errors import SessionClaimedError, UserError
from dive.llm import Usage
from dive.messages import Message
from dive.sessions._log import (
    Entry,
    Head,
    compaction_entry,
    fork_entries,
    now,
    open_turn,
    plan_checkpoint,
    plan_compact,
    plan_remove_last,
    snapshot,
    sum_usage,
    superseded,
)
from dive.sessions._protocol import Session, SessionInfo, SessionSnapshot, validate_session_id
from dive.turns import Turn

__all__ = ["MemorySessionStore"]


@dataclass(slots=True)
class _Row:
    entries: list[Entry] = field(default_factory=list[Entry])
    revision: int = 0
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    claim: tuple[str, float] | None = None


class MemorySessionStore:
    """Sessions held in this process's memory (lost when it exits)."""

    def __init__(self) -> None:
        self._rows: dict[str, _Row] = {}

    def session(self, id: str) -> Session:
        return Session(self, id)

    def _row(self, id: str) -> _Row:
        validate_session_id(id)
        row = self._rows.get(id)
        if row is None:
            row = self._rows[id] = _Row()
        return row

    def _bump(self, row: _Row) -> int:
        row.revision += 1
        row.updated_at = time.time()
        return row.revision

    async def load(self, id: str) -> SessionSnapshot:
        validate_session_id(id)
        row = self._rows.get(id)
        if row is None:
            return SessionSnapshot()
        return snapshot(row.entries, row.revision)

    async def checkpoint(self, id: str, turn: Turn, *, expected_revision: int) -> int:
        row = self._row(id)
        plan = plan_checkpoint(
            row.entries, turn, expected_revision=expected_revision, revision=row.revision
        )
        if plan.action == "replace":
            row.entries[-1] = plan.turn
        else:
            if plan.supersede:
                row.entries[-1] = superseded(row.entries[-1])
            row.entries.append(plan.turn)
        return self._bump(row)

    async def list(
        self, *, limit: int = 100, offset: int = 0, suspended: bool | None = None
    ) -> list[SessionInfo]:
        out: list[SessionInfo] = []
        for sid, row in self._rows.items():
            if not row.entries:
                continue
            found = open_turn(row.entries)
            is_suspended = found is not None and found[1].status == "suspended"
            if suspended is not None and is_suspended != suspended:
                continue
            out.append(
                SessionInfo(
                    id=sid,
                    turn_count=sum(1 for e in row.entries if isinstance(e, Turn)),
                    revision=row.revision,
                    suspended=is_suspended,
                    created_at=_dt(row.created_at),
                    updated_at=_dt(row.updated_at),
                )
            )
        out.sort(key=lambda i: i.updated_at or now(), reverse=True)
        return out[offset : offset + limit]

    async def delete(self, id: str) -> None:
        validate_session_id(id)
        self._rows.pop(id, None)

    async def fork(self, id: str, new_id: str, *, include_open_turn: bool = False) -> int:
        source = self._row(id)
        target = self._row(new_id)
        if target.entries:
            raise UserError(f"cannot fork into {new_id!r}: that session already exists")
        target.entries = fork_entries(source.entries, include_open_turn=include_open_turn)
        return self._bump(target)

    async def compact(
        self,
        id: str,
        summary: Message,
        *,
        head: Sequence[Message] = (),
        tail: Sequence[Message] = (),
    ) -> int:
        row = self._row(id)
        plan_compact(Head.of(row.entries[-1]) if row.entries else None)
        entry = compaction_entry(summary, head=head, tail=tail, revision=row.revision + 1)
        row.entries.append(entry)
        return self._bump(row)

    async def remove_last_turn(self, id: str, *, expected_revision: int | None = None) -> int:
        row = self._row(id)
        head = Head.of(row.entries[-1]) if row.entries else None
        plan_remove_last(head, expected_revision=expected_revision, revision=row.revision)
        del row.entries[-1]
        return self._bump(row)

    async def turns(self, id: str) -> list[Turn]:
        validate_session_id(id)
        row = self._rows.get(id)
        return [] if row is None else [e for e in row.entries if isinstance(e, Turn)]

    async def total_usage(self, id: str) -> Usage:
        validate_session_id(id)
        row = self._rows.get(id)
        return Usage.ZERO if row is None else sum_usage(row.entries)

    async def claim(self, id: str, owner: str, ttl: float) -> None:
        row = self._row(id)
        held = row.claim
        t = time.monotonic()
        if held is not None and held[0] != owner and held[1] > t:
            raise SessionClaimedError(
                f"session {id!r} is claimed by {held[0]} for another {held[1] - t:.1f} s"
            )
        row.claim = (owner, t + ttl)

    async def renew_claim(self, id: str, owner: str, ttl: float) -> None:
        row = self._row(id)
        held = row.claim
        t = time.monotonic()
        if held is None or held[0] != owner or held[1] <= t:
            raise SessionClaimedError(f"the claim of {owner} on session {id!r} was lost")
        row.claim = (owner, t + ttl)

    async def release_claim(self, id: str, owner: str) -> None:
        row = self._row(id)
        if row.claim is not None and row.claim[0] == owner:
            row.claim = None


def _dt(ts: float):

    return datetime.fromtimestamp(ts, UTC)
