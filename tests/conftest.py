import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from dive.sessions._postgres import PostgresSessionStore

settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "ci", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def postgres_dsn() -> str:
    """The test PostgreSQL DSN; in CI its absence is a failure, never a skip."""
    dsn = os.environ.get("DIVE_TEST_POSTGRES_DSN")
    if dsn:
        return dsn
    if os.environ.get("CI"):
        pytest.fail("DIVE_TEST_POSTGRES_DSN is not set: `make test` starts PostgreSQL in CI")
    pytest.skip("PostgreSQL not running: use `make test`, which starts it")


async def fresh_pg_store() -> "PostgresSessionStore":
    """A PostgresSessionStore on a clean schema (tables dropped first)."""
    import psycopg

    from dive.sessions._postgres import PostgresSessionStore

    dsn = postgres_dsn()
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        for table in ("dive_steps", "dive_entries", "dive_sessions", "dive_claims", "dive_meta"):
            await conn.execute(f"DROP TABLE IF EXISTS {table}")  # pyright: ignore[reportArgumentType]
    return await PostgresSessionStore(dsn).open()


@pytest.fixture
async def pg_store() -> AsyncIterator["PostgresSessionStore"]:
    """A fresh PostgresSessionStore on a clean schema."""
    store = await fresh_pg_store()
    yield store
    await store.close()
