"""Shared pieces of the Temporal tests: the dev server's address, a test environment with an
in-process worker, and worker child processes that can be SIGKILLed."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.client import Client

from dive.sessions import SQLiteSessionStore
from dive.temporal import TemporalAgent, connect
from tests.temporal_app import temporal_agent

ROOT = Path(__file__).resolve().parent.parent


def temporal_address() -> str:
    """The test Temporal dev server; in CI its absence is a failure, never a skip."""
    address = os.environ.get("DIVE_TEST_TEMPORAL_ADDRESS")
    if address:
        return address
    if os.environ.get("CI"):
        pytest.fail("DIVE_TEST_TEMPORAL_ADDRESS is not set: `make test` starts the dev server")
    pytest.skip("the Temporal dev server is not running: use `make test`, which starts it")


@dataclass
class Env:
    """A client, a store, the test agent on Temporal, a fresh task queue and an effects log."""

    client: Client
    store: SQLiteSessionStore
    agent: TemporalAgent[str, None]
    queue: str
    db: Path
    effects: Path

    def effect_lines(self) -> list[str]:
        return self.effects.read_text().splitlines() if self.effects.exists() else []

    async def wait_for_effect(self, prefix: str, limit: float = 30.0) -> str:
        async with asyncio.timeout(limit):
            while True:
                for line in self.effect_lines():
                    if line.startswith(prefix):
                        return line
                await asyncio.sleep(0.05)


@asynccontextmanager
async def environment(tmp_path: Path, *, in_process_worker: bool = True) -> AsyncGenerator[Env]:
    client = await connect(temporal_address())
    db = tmp_path / "sessions.db"
    store = SQLiteSessionStore(db)
    effects = tmp_path / "effects.log"
    os.environ["DIVE_TEST_EFFECTS"] = str(effects)
    env = Env(client, store, temporal_agent(store), f"dive-test-{uuid.uuid4().hex}", db, effects)
    try:
        if not in_process_worker:
            yield env
            return
        async with env.agent.worker(client, task_queue=env.queue, max_concurrent_activities=50):
            yield env
    finally:
        os.environ.pop("DIVE_TEST_EFFECTS", None)
        await store.close()


class WorkerProcess:
    """``python -m tests.temporal_app worker`` in a child process (SIGKILL-able)."""

    def __init__(self, env: Env, *, block: str | None = None, heartbeat: float = 1.0) -> None:
        child_env = {**os.environ, "DIVE_TEST_EFFECTS": str(env.effects)}
        if block is not None:
            child_env["DIVE_TEST_BLOCK"] = block
        address = temporal_address()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.temporal_app",
                "worker",
                address,
                env.queue,
                str(env.db),
                str(heartbeat),
            ],
            cwd=ROOT,
            env=child_env,
            stdout=subprocess.PIPE,
            text=True,
        )

    async def ready(self) -> None:
        assert self.proc.stdout is not None
        line = await asyncio.to_thread(self.proc.stdout.readline)
        assert line.strip() == "READY", line

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
