"""Step checkpoints, crash recovery across real processes, claims, and store corruption."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dive.agent import Agent, Durability
from dive.errors import (
    ReentrantSessionError,
    SessionClaimedError,
    SessionCorruptedError,
    StoreError,
)
from dive.messages import validate_complete_turns
from dive.sessions import MemorySessionStore, SQLiteSessionStore
from dive.testing import ScriptedModel, Step, call, text, tool_use
from dive.tools import ToolContext, tool
from dive.turns import UNKNOWN_TEXT, Turn
from tests.conftest import fresh_pg_store, postgres_dsn

ROOT = Path(__file__).resolve().parent.parent


class CountingStore(MemorySessionStore):
    def __init__(self, fail_at: int | None = None) -> None:
        super().__init__()
        self.statuses: list[str] = []
        self.fail_at = fail_at

    async def checkpoint(self, id: str, turn: Turn, *, expected_revision: int) -> int:
        if self.fail_at is not None and len(self.statuses) + 1 == self.fail_at:
            self.statuses.append("FAILED")
            raise OSError("disk full")
        self.statuses.append(turn.status)
        return await super().checkpoint(id, turn, expected_revision=expected_revision)


def two_call_agent(store: MemorySessionStore, effects: list[str], **kw: Any) -> Agent:
    @tool
    async def act(ctx: ToolContext, label: str) -> str:
        """Do something with an effect."""
        effects.append(f"{ctx.idempotency_key}:{label}")
        return label

    model = ScriptedModel(
        [
            tool_use(call("act", {"label": "a"}, id="c1"), call("act", {"label": "b"}, id="c2")),
            text("done"),
        ]
    )
    return Agent(
        model=model,
        tools=[act],
        session=store.session("s"),
        durability=Durability(checkpoint_steps=True),
        **kw,
    )


async def test_two_sequential_calls_make_seven_checkpoints() -> None:
    store = CountingStore()
    effects: list[str] = []
    result = await two_call_agent(store, effects, parallel_tool_execution=False).run("go")
    assert result.status == "completed"
    assert store.statuses == ["running"] * 6 + ["completed"]
    assert len(effects) == 2


async def test_parallel_launch_is_one_checkpoint() -> None:
    store = CountingStore()
    effects: list[str] = []
    agent = two_call_agent(store, effects)  # parallel by default
    result = await agent.run("go")
    assert result.status == "completed"
    # first call, response, one launch, two results, final
    assert store.statuses == ["running"] * 5 + ["completed"]


@pytest.mark.parametrize("fail_at", [1, 2, 3, 4, 5, 6])
async def test_failed_step_checkpoint_stops_before_the_step(fail_at: int) -> None:
    store = CountingStore(fail_at=fail_at)
    effects: list[str] = []
    result = await two_call_agent(store, effects, parallel_tool_execution=False).run("go")
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "error"
    assert "step checkpoint" in (result.outcome.error or "")
    # checkpoints: 1 first call, 2 response, 3 start c1, 4 result c1, 5 start c2, 6 result c2
    expected_effects = {1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 2}[fail_at]
    assert len(effects) == expected_effects
    validate_complete_turns(result.turn.messages)
    states = {c.id: c.state for c in result.turn.tool_calls}
    if fail_at == 3:
        assert states["c1"] == "not_started"
    assert "unknown" not in states.values()


async def test_store_errors_never_run_an_unrecorded_tool() -> None:
    store = CountingStore(fail_at=3)
    effects: list[str] = []
    await two_call_agent(store, effects).run("go")
    assert effects == []


async def test_reentrant_run_on_the_same_session_is_refused() -> None:
    store = MemorySessionStore()
    inner_error: list[BaseException] = []
    holder: list[Agent] = []

    @tool
    async def nested() -> str:
        """Start a run on the same session from inside a tool."""
        try:
            await holder[0].run("again")
        except ReentrantSessionError as exc:
            inner_error.append(exc)
            return "refused"
        return "ran"

    model = ScriptedModel([tool_use(call("nested", {})), text("ok")])
    agent = Agent(model=model, tools=[nested], session=store.session("r"))
    holder.append(agent)
    result = await agent.run("go")
    assert result.status == "completed"
    assert len(inner_error) == 1


async def test_lost_claim_cancels_the_run() -> None:
    class LosingStore(MemorySessionStore):
        async def renew_claim(self, id: str, owner: str, ttl: float) -> None:
            raise SessionClaimedError("claim taken over by another process")

    store = LosingStore()
    model = ScriptedModel([Step(response=text("late"), delay=1.0)])
    agent = Agent(
        model=model,
        session=store.session("c"),
        durability=Durability(claim=True, claim_ttl=0.06),
    )
    result = await agent.run("go")
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "canceled"
    assert isinstance(result.error, SessionClaimedError)
    assert result.persistence == "saved"


async def test_claim_refused_before_anything_runs() -> None:
    store = MemorySessionStore()
    await store.claim("c", "someone-else", 30)
    model = ScriptedModel([text("never")])
    agent = Agent(model=model, session=store.session("c"), durability=Durability(claim=True))
    with pytest.raises(SessionClaimedError, match="someone-else"):
        await agent.run("go")
    assert model.requests == []
    assert (await store.load("c")).revision == 0


# --- real processes --------------------------------------------------------------------------


def child(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.durable_child", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )


def kill_at_checkpoint(args: list[str], n: int) -> list[str]:
    proc = child(*args, "crash", str(n))
    assert proc.stdout is not None
    seen: list[str] = []
    for line in proc.stdout:
        seen.append(line.strip())
        if line.startswith(f"CKPT {n} "):
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=30)
    err = proc.stderr.read() if proc.stderr else ""
    proc.stdout.close()
    if proc.stderr:
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL, (seen, err)
    return seen


def backend_args(backend: str, tmp: Path) -> tuple[str, str]:
    if backend == "sqlite":
        return "sqlite", str(tmp / "sessions.db")
    return "postgres", postgres_dsn()


async def stored_turns(backend: str, target: str, session: str) -> list[Turn]:
    if backend == "sqlite":
        store = SQLiteSessionStore(target)
        try:
            return await store.turns(session)
        finally:
            await store.close()
    from dive.sessions._postgres import PostgresSessionStore

    async with PostgresSessionStore(target) as pg:
        return await pg.turns(session)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_crash_at_every_checkpoint_recovers(backend: str, tmp_path: Path) -> None:
    if backend == "postgres":
        await (await fresh_pg_store()).close()
    kind, target = backend_args(backend, tmp_path)
    for n in range(1, 9):
        session = f"crash-{n}"
        effects = tmp_path / f"effects-{n}.txt"
        effects.touch()
        seen = kill_at_checkpoint([kind, target, session, str(effects)], n)
        assert seen[-1].startswith(f"CKPT {n}")
        before = await stored_turns(kind, target, session)
        assert before, f"kill point {n}: nothing was stored"
        recover = child(kind, target, session, str(effects), "recover")
        out, err = recover.communicate(timeout=60)
        assert recover.returncode == 0, err
        assert "DONE completed" in out, (n, out, err)
        if before[-1].status == "running":
            assert "RECOVERED process_exit" in out, (n, out)
        turns = await stored_turns(kind, target, session)
        history = [m for t in turns for m in t.messages]
        validate_complete_turns(history)
        lines = effects.read_text().splitlines()
        counts = Counter(line.split()[0] for line in lines)
        assert all(c == 1 for c in counts.values()), f"kill point {n}: an effect repeated"
        final = turns[-1]
        assert final.status == "completed"
        if before[-1].status == "running":
            # the crashed turn was closed as process_exit, then continued into completion
            for rec in final.tool_calls:
                key = f"{final.id}:{rec.id}"
                if rec.state == "completed":
                    assert counts[key] == 1, f"kill point {n}: completed call without effect"
                if rec.state == "unknown":
                    answer = next(
                        m.tool_result
                        for m in final.messages
                        if m.tool_result is not None and m.tool_result.tool_call_id == rec.id
                    )
                    assert answer.text == UNKNOWN_TEXT


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_two_processes_one_session(backend: str, tmp_path: Path) -> None:
    if backend == "postgres":
        await (await fresh_pg_store()).close()
    kind, target = backend_args(backend, tmp_path)
    effects = str(tmp_path / "unused.txt")
    # make sure the schema exists before both start
    await stored_turns(kind, target, "warm")
    a = child(kind, target, "shared", effects, "hold")
    b = child(kind, target, "shared", effects, "hold")
    out_a, err_a = a.communicate(timeout=60)
    out_b, err_b = b.communicate(timeout=60)
    outs = [out_a, out_b]
    assert len([o for o in outs if "RAN completed" in o]) == 1, (outs, err_a, err_b)
    assert len([o for o in outs if o.startswith("CLAIMED")]) == 1, (outs, err_a, err_b)
    # after the first released, the second succeeds
    c = child(kind, target, "shared", effects, "hold")
    out_c, err_c = c.communicate(timeout=60)
    assert "RAN completed" in out_c, (out_c, err_c)


async def _claim_from_another_host(kind: str, target: str, session: str) -> None:
    if kind == "sqlite":
        with sqlite3.connect(target) as db:
            db.execute("UPDATE dive_claims SET host = 'elsewhere' WHERE session_id = ?", (session,))
        return
    import psycopg

    async with await psycopg.AsyncConnection.connect(target, autocommit=True) as conn:
        await conn.execute(
            "UPDATE dive_claims SET host = 'elsewhere' WHERE session_id = %s", (session,)
        )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_expired_claim_is_taken_over(backend: str, tmp_path: Path) -> None:
    if backend == "postgres":
        await (await fresh_pg_store()).close()
    kind, target = backend_args(backend, tmp_path)
    effects = str(tmp_path / "unused.txt")
    await stored_turns(kind, target, "warm")
    ttl = "2.5"
    holder = child(kind, target, "lease", effects, "hold", ttl)
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "HOLDING"  # claimed, inside its model call
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    holder.stdout.close()
    if holder.stderr:
        holder.stderr.close()
    # A dead holder on this host loses its claim at once; one recorded by another host (whose
    # pid says nothing here) keeps it until its lease ends.
    await _claim_from_another_host(kind, target, "lease")
    second = child(kind, target, "lease", effects, "hold", ttl)
    out, err = second.communicate(timeout=60)
    assert out.startswith("CLAIMED"), (out, err)  # the foreign holder's lease is still live
    await asyncio.sleep(2.6)
    third = child(kind, target, "lease", effects, "hold", ttl)
    out, err = third.communicate(timeout=60)
    assert "RAN completed" in out, (out, err)


# --- corruption and schema versions -------------------------------------------------------------


async def test_sqlite_corrupted_row_is_reported_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)
    agent = Agent(model=ScriptedModel([text("a"), text("b")]), session=store.session("x"))
    await agent.run("one")
    await agent.run("two")
    await store.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE dive_entries SET data = '{not json' WHERE seq = 0")
    store = SQLiteSessionStore(path)
    with pytest.raises(SessionCorruptedError, match=r"session 'x'.*revision 1"):
        await store.load("x")
    with pytest.raises(SessionCorruptedError):
        await Agent(model=ScriptedModel([text("c")]), session=store.session("x")).run("three")
    await store.close()
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT seq, data FROM dive_entries ORDER BY seq").fetchall()
    assert rows[0][1] == "{not json"
    assert len(rows) == 2


async def test_sqlite_unknown_schema_version_refuses_to_open(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)
    await store.load("x")
    await store.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE dive_meta SET value = '99' WHERE key = 'schema_version'")
    store = SQLiteSessionStore(path)
    with pytest.raises(StoreError, match="schema version 99"):
        await store.load("x")
    await store.close()


async def test_postgres_corrupted_row_and_schema_version() -> None:
    import psycopg

    from dive.sessions._postgres import PostgresSessionStore

    store = await fresh_pg_store()
    agent = Agent(model=ScriptedModel([text("a")]), session=store.session("x"))
    await agent.run("one")
    await store.close()
    dsn = postgres_dsn()
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute("UPDATE dive_entries SET data = '{\"id\": 3}' WHERE session_id = 'x'")
    async with PostgresSessionStore(dsn) as again:
        with pytest.raises(SessionCorruptedError, match=r"session 'x'.*revision 1"):
            await again.load("x")
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute("SELECT data FROM dive_entries WHERE session_id = 'x'")
        assert (await cur.fetchone()) == ('{"id": 3}',)
        await conn.execute("UPDATE dive_meta SET value = '7' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="schema version 7"):
        await PostgresSessionStore(dsn).open()


async def test_open_store_picks_the_backend(tmp_path: Path) -> None:
    from dive.sessions import open_store

    sqlite_store = await open_store(tmp_path / "a.db")
    assert isinstance(sqlite_store, SQLiteSessionStore)
    await Agent(model=ScriptedModel([text("hi")]), session=sqlite_store.session("x")).run("hello")
    assert (tmp_path / "a.db").exists()
    await sqlite_store.close()
    await (await fresh_pg_store()).close()  # earlier tests may leave a bumped schema version
    pg = await open_store(postgres_dsn())
    assert type(pg).__name__ == "PostgresSessionStore"
    await pg.close()
