"""The public conformance suite, run against every session backend dive ships."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dive.sessions import MemorySessionStore, SessionStore, SQLiteSessionStore
from dive.testing.session_conformance import CHECKS, Check
from tests.conftest import fresh_pg_store

BACKENDS = ["memory", "sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    kind = request.param
    if kind == "memory":
        yield MemorySessionStore()
    elif kind == "sqlite":
        s = SQLiteSessionStore(tmp_path / "sessions.db")
        yield s
        await s.close()
    else:
        pg = await fresh_pg_store()
        yield pg
        await pg.close()


@pytest.mark.parametrize("check", list(CHECKS.values()), ids=list(CHECKS.keys()))
async def test_conformance(store: SessionStore, check: Check) -> None:
    await check(store)
