"""Agents the A2A and AG-UI tests serve (not a test module).

``banker()`` asks which account to close (its ``ask_account`` tool suspends), then closes
it; its model is a function of the request, so any process plays the same part.
``python -m tests.a2a_agents <port> <store target>`` serves it over A2A on 127.0.0.1 (a
``postgresql://`` target is a PostgreSQL store, anything else an SQLite file).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import uvicorn

from dive.agent import Agent
from dive.llm import ModelRequest, ModelResponse
from dive.sessions import open_store
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import Suspend, tool


@tool
def ask_account(reason: str) -> Suspend:
    """Ask the customer which account they mean."""
    return Suspend(f"Which account should I {reason}?", metadata={"form": "account"})


@tool
def lookup_balance(account: str) -> str:
    """The balance of an account."""
    return f"{account}: 120 EUR"


def banker_reply(request: ModelRequest) -> ModelResponse:
    last = request.messages[-1]
    if last.tool_result is not None:
        if last.tool_result.is_error:
            return text(f"I could not: {last.tool_result.text}")
        return text(f"Closed account {last.tool_result.text}.")
    return tool_use(call("ask_account", {"reason": "close"}), text="Let me check.")


def banker(*, name: str = "banker") -> Agent[Any, Any]:
    model = ScriptedModel([banker_reply] * 50)
    return Agent(
        model=model,
        name=name,
        description="Closes bank accounts.",
        tools=[ask_account, lookup_balance],
    )


async def _main(port: int, target: str) -> None:
    from dive.a2a import a2a_app

    store = await open_store(target)
    try:
        app = a2a_app(banker(), store=store)
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        await uvicorn.Server(config).serve()
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(_main(int(sys.argv[1]), sys.argv[2]))
