"""A child process for the cross-process suspend/resume tests (not a test module).

Usage: python -m tests.suspend_child <backend> <target> <session> <effects-file> <mode>

- backend: "sqlite" (target is a file path) or "postgres" (target is a DSN).
- mode "start": run a turn whose one response asks for two calls, run in parallel: ``ask_user``
  (the tool suspends itself) and ``write_note`` (held at the approval gate). Prints one JSON
  line ``SUSPENDED {...}`` describing the result.
- mode "resume": load the session, answer ``ask_user`` and approve ``write_note`` (which then
  runs, appending to the effects file), and let the model finish. Prints ``RESUMED {...}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from dive.agent import Agent, ToolApproval
from dive.messages import validate_complete_turns
from dive.sessions import SessionStore, SQLiteSessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import Suspend, ToolContext, tool
from dive.turns import PendingToolCall

METADATA: dict[str, Any] = {"form": {"fields": ["colour"], "required": True}, "n": 3, "x": None}


async def open_store(backend: str, target: str) -> Any:
    if backend == "sqlite":
        return SQLiteSessionStore(target)
    from dive.sessions._postgres import PostgresSessionStore

    return await PostgresSessionStore(target).open()


def make_tools(effects: Path) -> list[Any]:
    @tool
    async def ask_user(question: str) -> Suspend:
        """Ask the user a question and wait for the answer."""
        return Suspend(prompt=question, reason="input_required", metadata=METADATA)

    @tool(requires_approval=True, effect_type="write")
    async def write_note(ctx: ToolContext, note: str) -> str:
        """Write a note (needs approval)."""
        with effects.open("a") as f:
            f.write(f"{ctx.idempotency_key} {note}\n")
        return f"wrote {note}"

    return [ask_user, write_note]


def describe(p: PendingToolCall) -> dict[str, Any]:
    return {
        "id": p.id,
        "name": p.name,
        "input": dict(p.input),
        "prompt": p.prompt,
        "reason": p.reason,
        "metadata": dict(p.metadata),
        "started": p.started,
    }


async def main(argv: list[str]) -> None:
    backend, target, session_id, effects_path, mode = argv[:5]
    effects = Path(effects_path)
    store: SessionStore = await open_store(backend, target)
    session = store.session(session_id)
    try:
        if mode == "start":
            model = ScriptedModel(
                [
                    tool_use(
                        call("ask_user", {"question": "Which colour?"}, id="c1"),
                        call("write_note", {"note": "hello"}, id="c2"),
                    )
                ]
            )
            agent = Agent(
                model=model,
                tools=make_tools(effects),
                session=session,
                parallel_tool_execution=True,
            )
            result = await agent.run("pick a colour and write a note")
            assert result.turn.suspension is not None, result.status
            out = {
                "status": result.status,
                "persistence": result.persistence,
                "revision": result.turn.revision,
                "turn_id": result.turn.id,
                "pending": [describe(p) for p in result.turn.suspension.pending_tool_calls],
            }
            print("SUSPENDED " + json.dumps(out), flush=True)
        elif mode == "resume":
            snap = await session.load()
            assert snap.open_turn is not None
            assert snap.open_turn.suspension is not None
            model = ScriptedModel([text("blue it is, and the note is written")])
            agent = Agent(model=model, tools=make_tools(effects), session=session)
            result = await agent.run(
                tool_results={"c1": "blue", "c2": ToolApproval(approved=True)},
                turn_id=snap.open_turn.id,
                expected_revision=snap.revision,
            )
            [request] = model.requests
            answered = {
                r.tool_call_id: r.text for m in request.messages if (r := m.tool_result) is not None
            }
            history = await session.messages()
            validate_complete_turns(history)
            out = {
                "status": result.status,
                "turn_id": result.turn.id,
                "persistence": result.persistence,
                "output_text": result.output_text,
                "answered": answered,
                "turns": len(await session.turns()),
            }
            print("RESUMED " + json.dumps(out), flush=True)
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            await close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
