"""One dive agent calling another over A2A, offline.

    python examples/a2a_pair.py

A *travel desk* agent is served over A2A (``a2a_app``) on 127.0.0.1; a *concierge* agent
calls it as a tool (``RemoteAgent``). The travel desk needs to know the date, so its task
turns ``input-required``: the concierge's own turn suspends with the desk's question, the
person answers, and the concierge's resume carries the answer back to the desk, whose reply
becomes the concierge's tool result. Both sessions live in SQLite files under
``.dive-example/``; dive's scripted model plays both models.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import uvicorn

from dive.a2a import RemoteAgent, a2a_app
from dive.agent import Agent
from dive.llm import ModelRequest, ModelResponse
from dive.sessions import SQLiteSessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import Suspend, tool

HERE = Path(".dive-example")


@tool
def ask_date(question: str) -> Suspend:
    """Ask the traveller for something the booking needs."""
    return Suspend(question)


def desk_model(request: ModelRequest) -> ModelResponse:
    """The travel desk: asks for the date, then books."""
    last = request.messages[-1]
    if last.tool_result is not None:
        return text(f"Booked: the night train to Vienna on {last.tool_result.text}.")
    return tool_use(call("ask_date", {"question": "Which date should I book the train for?"}))


def concierge_model(request: ModelRequest) -> ModelResponse:
    """The concierge: hands the request to the travel desk, then reports back."""
    last = request.messages[-1]
    if last.tool_result is not None:
        return text(f"All set. The travel desk says: {last.tool_result.text}")
    return tool_use(call("travel_desk", {"message": "Book the night train to Vienna."}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def main() -> None:
    desk_store = SQLiteSessionStore(HERE / "travel-desk.db")
    concierge_store = SQLiteSessionStore(HERE / "concierge.db")
    await concierge_store.delete("trip")
    desk = Agent(
        model=ScriptedModel([desk_model] * 4),
        name="travel desk",
        description="Books trains.",
        tools=[ask_date],
    )
    port = free_port()
    config = uvicorn.Config(
        a2a_app(desk, store=desk_store), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 (uvicorn offers a flag, not an event)
        await asyncio.sleep(0.01)
    try:
        remote = await RemoteAgent.connect(f"http://127.0.0.1:{port}/")
        print(f"connected to {remote.name!r}: {remote.definition.description}")
        concierge = Agent(
            model=ScriptedModel([concierge_model] * 4),
            extensions=[remote],
            session=concierge_store.session("trip"),
        )
        first = await concierge.run("Get me to Vienna by night train.")
        assert first.turn.suspension is not None, first.status
        [pending] = first.turn.suspension.pending_tool_calls
        print(f"concierge {first.status}: the travel desk asks {pending.prompt!r}")
        answer = "Friday 14 March"
        print(f"traveller answers: {answer}")
        done = await concierge.run(tool_results={pending.id: answer})
        print(f"concierge {done.status}: {done.output}")
    finally:
        server.should_exit = True
        await serving
        await desk_store.close()
        await concierge_store.close()


if __name__ == "__main__":
    HERE.mkdir(exist_ok=True)
    asyncio.run(main())
