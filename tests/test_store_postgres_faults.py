"""PostgreSQL store faults (issue 12): driver errors surface as ``StoreError`` subclasses that
name the DSN (never its password) and the session, with the psycopg error as the cause."""

from __future__ import annotations

import socket

import pytest

from dive.errors import StoreCorruptedError, StoreError, StoreUnavailableError
from dive.testing.session_conformance import turn
from tests.conftest import fresh_pg_store, postgres_dsn


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def _from_psycopg(exc: BaseException) -> None:
    import psycopg

    assert isinstance(exc, StoreError), repr(exc)
    assert isinstance(exc.__cause__, psycopg.Error), repr(exc.__cause__)


async def test_connection_refused_names_the_dsn_without_password() -> None:
    from dive.sessions._postgres import PostgresSessionStore

    port = _closed_port()
    dsn = f"postgresql://dive:s3cret-pw@127.0.0.1:{port}/dive_test"
    store = PostgresSessionStore(dsn, timeout=1.0)
    with pytest.raises(StoreUnavailableError) as info:
        await store.open()
    _from_psycopg(info.value)
    message = str(info.value)
    assert str(port) in message
    assert "127.0.0.1" in message
    assert "s3cret-pw" not in message
    await store.close()


async def test_dropped_connections_are_store_errors_and_the_store_recovers() -> None:
    import psycopg

    store = await fresh_pg_store()
    await store.checkpoint("x", turn(), expected_revision=0)
    async with await psycopg.AsyncConnection.connect(postgres_dsn(), autocommit=True) as admin:
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    with pytest.raises(StoreUnavailableError) as info:
        await store.load("x")
    _from_psycopg(info.value)
    assert "'x'" in str(info.value)
    assert "dive_test" in str(info.value)
    revision = None
    for _ in range(5):  # broken connections leave the pool; a fresh one takes over
        try:
            revision = (await store.load("x")).revision
            break
        except StoreUnavailableError:
            continue
    assert revision == 1
    await store.close()


async def test_missing_tables_are_a_store_error() -> None:
    import psycopg

    store = await fresh_pg_store()
    await store.checkpoint("x", turn(), expected_revision=0)
    async with await psycopg.AsyncConnection.connect(postgres_dsn(), autocommit=True) as admin:
        await admin.execute("DROP TABLE dive_entries")
    with pytest.raises(StoreCorruptedError) as info:
        await store.load("x")
    _from_psycopg(info.value)
    assert "'x'" in str(info.value)
    with pytest.raises(StoreCorruptedError):
        await store.checkpoint("x", turn(), expected_revision=1)
    await store.close()
