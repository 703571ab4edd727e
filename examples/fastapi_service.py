"""A FastAPI service with a dive agent mounted over A2A and AG-UI.

    uvicorn examples.fastapi_service:app --port 8000      # then:
    curl http://127.0.0.1:8000/agents/shop/.well-known/agent-card.json

``/agents/shop`` serves the agent over A2A (JSON-RPC and streaming), ``/agui`` to AG-UI
front ends, and ``/health`` is FastAPI's own. The sessions live in an SQLite file
(``DIVE_SERVICE_DB``, default ``.dive-example/service.db``); every process serving that file
continues the same tasks and threads. Offline, dive's scripted model answers. Needs
``pip install fastapi`` besides ``dive-agents[a2a]``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from dive.a2a import a2a_app
from dive.agent import Agent
from dive.agui import agui_app
from dive.llm import ModelRequest, ModelResponse
from dive.sessions import SQLiteSessionStore
from dive.testing import ScriptedModel, text
from dive.tools import tool

try:
    from fastapi import FastAPI
except ImportError:  # fastapi is not a dependency of dive: the example says what it needs
    sys.exit("this example needs FastAPI: pip install fastapi")


@tool
def stock(item: str) -> str:
    """How many of an item are in stock."""
    return f"{item}: 12 in stock"


def reply(request: ModelRequest) -> ModelResponse:
    return text(f"You said: {request.messages[-1].text}")


DB = Path(os.environ.get("DIVE_SERVICE_DB", ".dive-example/service.db"))
DB.parent.mkdir(parents=True, exist_ok=True)
store = SQLiteSessionStore(DB)
agent = Agent(
    model=ScriptedModel([reply] * 1000),
    name="shop assistant",
    description="Answers questions about the shop.",
    tools=[stock],
)

app = FastAPI(title="shop")
app.mount("/agents/shop", a2a_app(agent, store=store))
app.mount("/agui", agui_app(agent, store=store))


@app.get("/health")
def health() -> dict[str, str]:
    return {"status": "ok"}
