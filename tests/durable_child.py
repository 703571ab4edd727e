"""A child process for the crash and multi-process tests (not a test module).

Usage: python -m tests.durable_child <backend> <target> <session> <effects-file> <mode> [kill_at]

- backend: "sqlite" (target is a file path) or "postgres" (target is a DSN).
- mode "crash": run a durable turn (two sequential tool calls, then a final answer) with step
  checkpoints; after checkpoint number ``kill_at`` it prints ``CKPT n`` and blocks until the
  parent SIGKILLs it.
- mode "recover": continue the session (closing a turn a dead process left running), print
  ``DONE <status>``.
- mode "hold": claim the session and run a turn whose model takes 1.5 s; print ``RAN`` or
  ``CLAIMED`` (another process holds the claim).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from dive.agent import Agent, Durability
from dive.agent._begin import load_snapshot
from dive.errors import SessionClaimedError
from dive.sessions import SessionStore, SQLiteSessionStore
from dive.testing import ScriptedModel, Step, call, text, tool_use
from dive.tools import ToolContext, tool
from dive.turns import Turn


class Announcing:
    """Wraps a store: announces every checkpoint, and blocks after the chosen one."""

    def __init__(self, inner: Any, kill_at: int) -> None:
        self.inner = inner
        self.kill_at = kill_at
        self.count = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def session(self, id: str) -> Any:
        from dive.sessions import Session

        return Session(self, id)  # type: ignore[arg-type]

    async def checkpoint(self, id: str, turn: Turn, *, expected_revision: int) -> int:
        rev = await self.inner.checkpoint(id, turn, expected_revision=expected_revision)
        self.count += 1
        print(f"CKPT {self.count} {turn.status}", flush=True)
        if self.count == self.kill_at:
            await asyncio.sleep(3600)  # the parent kills us here
        return rev


async def open_store(backend: str, target: str) -> Any:
    if backend == "sqlite":
        return SQLiteSessionStore(target)
    from dive.sessions._postgres import PostgresSessionStore

    return await PostgresSessionStore(target).open()


def effect_tool(effects: Path) -> Any:
    @tool
    async def record_effect(ctx: ToolContext, label: str) -> str:
        """Record a side effect, keyed by (turn id, tool call id)."""
        with effects.open("a") as f:
            f.write(f"{ctx.idempotency_key} {label}\n")
        return f"recorded {label}"

    return record_effect


async def main(argv: list[str]) -> None:
    backend, target, session_id, effects_path, mode = argv[:5]
    effects = Path(effects_path)
    store: SessionStore = await open_store(backend, target)
    if mode == "crash":
        kill_at = int(argv[5])
        wrapped = Announcing(store, kill_at)
        model = ScriptedModel(
            [
                tool_use(call("record_effect", {"label": "one"}, id="c1")),
                tool_use(call("record_effect", {"label": "two"}, id="c2")),
                text("both recorded"),
            ]
        )
        agent = Agent(
            model=model,
            tools=[effect_tool(effects)],
            session=wrapped.session(session_id),
            durability=Durability(checkpoint_steps=True),
        )
        result = await agent.run("record two effects")
        print(f"FINISHED {result.status}", flush=True)
    elif mode == "recover":
        agent = Agent(
            model=ScriptedModel([text("continued to the end")]),
            tools=[effect_tool(effects)],
            session=store.session(session_id),
        )
        snap = await load_snapshot(agent._config(), store.session(session_id))
        if snap.open_turn is not None and snap.open_turn.outcome is not None:
            outcome = snap.open_turn.outcome
            print(f"RECOVERED {outcome.reason} {outcome.next}", flush=True)
        result = await agent.run(continue_turn=True)
        print(f"DONE {result.status}", flush=True)
    elif mode == "hold":

        async def slow_answer(_: object) -> Step:
            print("HOLDING", flush=True)
            return Step(response=text("held"), delay=1.5)

        agent = Agent(
            model=ScriptedModel([slow_answer]),
            session=store.session(session_id),
            durability=Durability(claim=True, claim_ttl=float(argv[5]) if len(argv) > 5 else 30),
        )
        try:
            result = await agent.run("hold the session")
        except SessionClaimedError as exc:
            print(f"CLAIMED {exc}", flush=True)
        else:
            print(f"RAN {result.status}", flush=True)
    close = getattr(store, "close", None)
    if close is not None:
        await close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
