"""Human approval across processes: suspend on a risky tool, save, resume from a second command.

    python examples/human_approval.py start            # the agent asks to delete a file; suspends
    python examples/human_approval.py approve          # a later process approves: the tool runs
    python examples/human_approval.py deny "not now"   # ... or denies it with a message

The session lives in an SQLite file (``DIVE_APPROVAL_DB``, default
``.dive-example/approval.db``). Offline, dive's scripted model plays the model.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from dive.agent import Agent, ToolApproval
from dive.sessions import SQLiteSessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import tool

DB = Path(os.environ.get("DIVE_APPROVAL_DB", ".dive-example/approval.db"))
SESSION = "approval-demo"


@tool(requires_approval=True, effect_type="write", risk_level="high")
def delete_file(path: str) -> str:
    """Delete a file (needs a person's approval)."""
    target = Path(path)
    if target.exists():
        target.unlink()
        return f"deleted {path}"
    return f"{path} did not exist; nothing to delete"


def agent(model: ScriptedModel, store: SQLiteSessionStore) -> Agent:
    return Agent(model=model, tools=[delete_file], session=store.session(SESSION))


async def start(store: SQLiteSessionStore) -> None:
    scratch = DB.parent / "old-report.txt"
    scratch.parent.mkdir(parents=True, exist_ok=True)
    scratch.write_text("obsolete\n")
    model = ScriptedModel([tool_use(call("delete_file", {"path": str(scratch)}))])
    result = await agent(model, store).run("Clean up the old report.")
    assert result.turn.suspension is not None, result.status
    for pending in result.turn.suspension.pending_tool_calls:
        print(f"suspended: {pending.reason} for {pending.name}({dict(pending.input)})")
        print(f"  prompt: {pending.prompt}")
    print(f"saved as revision {result.turn.revision} of session {SESSION!r} in {DB}")
    print('now run: python examples/human_approval.py approve   (or: deny "reason")')


async def decide(store: SQLiteSessionStore, approved: bool, message: str | None) -> None:
    snap = await store.load(SESSION)
    if snap.open_turn is None or snap.open_turn.suspension is None:
        print("nothing is waiting for approval; run `start` first")
        return
    [pending] = snap.open_turn.suspension.pending_tool_calls
    reply = "Done: the old report is gone." if approved else "Understood, I left it in place."
    model = ScriptedModel([text(reply)])
    result = await agent(model, store).run(
        tool_results={pending.id: ToolApproval(approved=approved, message=message)},
        expected_revision=snap.revision,
    )
    for m in result.turn.messages:
        if m.tool_result is not None:
            print(f"tool result: {m.tool_result.text}")
    print(f"status={result.status}; assistant: {result.output_text}")


async def main(argv: list[str]) -> None:
    DB.parent.mkdir(parents=True, exist_ok=True)
    store = SQLiteSessionStore(DB)
    try:
        command = argv[0] if argv else "start"
        if command == "start":
            await store.delete(SESSION)
            await start(store)
        elif command in ("approve", "deny"):
            message = argv[1] if len(argv) > 1 else None
            await decide(store, command == "approve", message)
        else:
            print(__doc__)
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
