"""Seeded sessions for the viewer's tests: one of each thing the pages must show.

- ``done``: a completed turn with a tool call (``add``).
- ``broken``: a completed turn, then one incomplete with ``provider_error`` (next: continue).
- ``waiting``: a turn suspended on an approval (``send_email`` is ``requires_approval``).
- ``asking``: a turn suspended on an ``AskUser`` question with choices.
- ``charged``: a payment tool that suspended and was cancelled: ``unknown``, needs reconcile.

``agent_for(store, session_id)`` is the agent factory the viewer resumes them with: the same
tools, and a model whose script finishes what each session started.
"""

from __future__ import annotations

from typing import Any

from dive import Agent, tool
from dive.errors import OverloadedError
from dive.messages import JSONValue
from dive.sessions import SessionStore
from dive.testing import ScriptedModel, Step, tool_use
from dive.toolkit import AskUser
from dive.tools import Suspend

SENT: list[str] = []


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(requires_approval=True, effect_type="external_side_effect")
def send_email(to: str, body: str) -> str:
    """Send an email."""
    SENT.append(to)
    return f"sent to {to}"


@tool(effect_type="external_side_effect")
def charge_card(amount: int) -> Suspend:
    """Charge the card (waits for the payment provider)."""
    return Suspend(f"waiting for the payment provider to confirm {amount}")


TOOLS: list[Any] = [add, send_email, charge_card, AskUser()]

FINISH: dict[str, list[Any]] = {
    "waiting": ["The email is on its way."],
    "asking": ["Blue it is."],
}


def agent_for(store: SessionStore, session_id: str, script: list[Any] | None = None) -> Agent:
    """The agent of ``session_id`` (the viewer's agent factory builds these)."""
    model = ScriptedModel(script if script is not None else FINISH.get(session_id, ["ok"]))
    return Agent(model=model, tools=TOOLS, session=store.session(session_id))


async def seed(store: SessionStore) -> None:
    """Write the five sessions (see the module docstring)."""
    await agent_for(store, "done", [tool_use(("add", {"a": 2, "b": 3})), "2 + 3 = 5."]).run(
        "what is 2 + 3?"
    )
    broken = agent_for(
        store, "broken", ["Hello!", Step(raise_before=OverloadedError("overloaded (529)"))]
    )
    await broken.run("hi")
    await broken.run("tell me more")
    await agent_for(
        store,
        "waiting",
        [tool_use(("send_email", {"to": "ada@example.com", "body": "hi"}), text="Sending.")],
    ).run("email Ada")
    question: dict[str, JSONValue] = {"question": "Which colour?", "choices": ["red", "blue"]}
    await agent_for(store, "asking", [tool_use(("AskUser", question))]).run("paint the shed")
    charged = agent_for(store, "charged", [tool_use(("charge_card", {"amount": 42}))])
    await charged.run("charge 42")
    await charged.cancel_suspended_turn()
