"""The viewer's inbox: a turn waits for an approval, the viewer records it, the owner resumes.

Offline (a scripted model, a SQLite file in a temporary folder):

1. an agent asks to deploy; ``deploy`` needs approval, so the turn suspends;
2. the viewer (``dive.viewer.app``, served by uvicorn on 127.0.0.1) lists the wait in its
   inbox, and an API client approves it (``Authorization: Bearer``: no CSRF field needed);
3. the viewer runs without an agent, so it records the decision in the store, and the
   process that owns the session applies it with ``apply_recorded_decisions``.

``python examples/viewer_inbox.py --serve`` keeps the viewer running instead, with an agent
factory, so you can open the printed URL and press Approve yourself (Ctrl-C to stop).
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

import uvicorn

from dive import Agent, tool
from dive.sessions import SQLiteSessionStore
from dive.testing import ScriptedModel, tool_use
from dive.viewer import app, apply_recorded_decisions, pending_waits, serve

TOKEN = "example-token"


@tool(requires_approval=True, effect_type="external_side_effect")
def deploy(version: str) -> str:
    """Deploy a version to production."""
    return f"{version} is live"


def make_agent(store: SQLiteSessionStore, session_id: str, *, resuming: bool = False) -> Agent:
    """The agent of ``session_id``; its scripted model asks to deploy, then reports."""
    script = [tool_use(("deploy", {"version": "v2"}), text="Deploying v2."), "v2 is live."]
    model = ScriptedModel(script[1:] if resuming else script)
    return Agent(model=model, tools=[deploy], session=store.session(session_id))


def _http(url: str, data: dict[str, str] | None = None) -> str:
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read().decode()


async def main(folder: Path) -> None:
    store = SQLiteSessionStore(folder / "sessions.db")
    owner = make_agent(store, "deploy")
    result = await owner.run("please deploy v2")
    print("turn:", result.turn.status)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app(store, token=TOKEN), log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))  # the socket already listens

    inbox = await asyncio.to_thread(_http, f"{base}/inbox")
    print("inbox lists the wait:", "Approve calling" in inbox and ">Approve</button>" in inbox)
    [wait] = await pending_waits(store)
    form = {"turn_id": wait.turn_id, "call_id": wait.call.id, "action": "approve"}
    await asyncio.to_thread(_http, f"{base}/sessions/deploy/decide", form)
    print("recorded:", json.dumps((await pending_waits(store))[0].recorded)[:40], "…")

    resumed = await apply_recorded_decisions(owner)  # the owning process applies it
    assert resumed is not None
    print("after the owner applied it:", resumed.turn.status, "-", resumed.output)

    server.should_exit = True
    await serving
    await store.close()


def serve_forever(folder: Path) -> None:
    store = SQLiteSessionStore(folder / "sessions.db")
    asyncio.run(make_agent(store, "deploy").run("please deploy v2"))
    serve(store, agent_factory=lambda session_id: make_agent(store, session_id, resuming=True))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        if "--serve" in sys.argv:
            serve_forever(Path(tmp))
        else:
            asyncio.run(main(Path(tmp)))
