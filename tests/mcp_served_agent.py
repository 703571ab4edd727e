"""A dive agent served with ``as_mcp_server`` (not a test module).

Usage: python -m tests.mcp_served_agent stdio
       python -m tests.mcp_served_agent streamable-http <port>

The agent (a scripted model) asks the user one question through a suspending tool, then a
gated write, then answers with both. Each ``tools/call`` is a stateless turn.
"""

from __future__ import annotations

import sys

from dive import Agent
from dive.mcp import as_mcp_server
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import Suspend, tool


@tool
async def ask_user(question: str) -> Suspend:
    """Ask the user."""
    return Suspend(question)


@tool(requires_approval=True, effect_type="write")
async def save(note: str) -> str:
    """Save a note (needs approval)."""
    return f"saved {note}"


def build() -> Agent:
    model = ScriptedModel(
        [
            tool_use(call("ask_user", {"question": "Which colour?"}, id="q")),
            tool_use(call("save", {"note": "colour"}, id="w")),
            lambda request: text(
                "; ".join(r.text for m in request.messages if (r := m.tool_result) is not None)
            ),
        ]
    )
    return Agent(model=model, tools=[ask_user, save], name="helper", description="A helper.")


def main() -> None:
    server = as_mcp_server(build(), name="served")
    if sys.argv[1] == "stdio":
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))


if __name__ == "__main__":
    main()
