"""PostgreSQL step checkpoints: other writers force a full record; a new store sees every step."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dive.errors import RevisionConflictError
from dive.testing.session_conformance import turn
from tests.conftest import fresh_pg_store, postgres_dsn


async def test_another_writer_forces_a_full_record_and_steps_recover() -> None:
    from dive.sessions._postgres import PostgresSessionStore

    a = await fresh_pg_store()
    b = await PostgresSessionStore(postgres_dsn()).open()
    try:
        t = turn("running")
        rev = await a.checkpoint("x", t, expected_revision=0)
        for i in range(1, 6):
            last = replace(t, messages=(*t.messages, *(t.messages[1],) * i), iterations=i)
            rev = await a.checkpoint("x", last, expected_revision=rev)
            assert (await b.load("x")).open_turn == replace(last, revision=rev, persistence="saved")
        other = replace(t, messages=(t.messages[0],), iterations=9)
        rev = await b.checkpoint("x", other, expected_revision=rev)
        grown = replace(t, messages=(*t.messages, t.messages[0]), iterations=10)
        rev = await a.checkpoint("x", grown, expected_revision=rev)
        for store in (a, b):
            snap = await store.load("x")
            assert snap.open_turn == replace(grown, revision=rev, persistence="saved")
    finally:
        await a.close()
        await b.close()


async def test_a_step_with_a_stale_revision_is_refused() -> None:
    from dive.sessions._postgres import PostgresSessionStore

    a = await fresh_pg_store()
    b = await PostgresSessionStore(postgres_dsn()).open()
    try:
        t = turn("running")
        rev = await a.checkpoint("x", t, expected_revision=0)
        rev = await a.checkpoint("x", replace(t, iterations=1), expected_revision=rev)
        await b.checkpoint("x", replace(t, iterations=2), expected_revision=rev)
        with pytest.raises(RevisionConflictError):
            await a.checkpoint("x", replace(t, iterations=3), expected_revision=rev)
        snap = await a.load("x")
        assert snap.open_turn is not None
        assert snap.open_turn.iterations == 2
    finally:
        await a.close()
        await b.close()
