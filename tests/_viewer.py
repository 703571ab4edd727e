"""Seeded sessions for the viewer's tests: one of each thing the pages must show.

- ``done``: a completed turn with a tool call (``add``).
- ``broken``: a completed turn, then one incomplete with ``provider_error`` (next: continue).
- ``waiting``: a turn suspended on an approval (``send_email`` is ``requires_approval``).
- ``asking``: a turn suspended on an ``AskUser`` question with choices.
- ``charged``: a payment tool that suspended and was cancelled: ``unknown``, needs reconcile.
- ``mixed``: three turns, completed, incomplete (``provider_error``), suspended (approval).

``agent_for(store, session_id)`` is the agent factory the viewer resumes them with: the same
tools, and a model whose script finishes what each session started.
"""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from dive import Agent, tool
from dive.errors import OverloadedError
from dive.messages import JSONValue
from dive.sessions import SessionStore
from dive.testing import ScriptedModel, Step, tool_use
from dive.toolkit import AskUser
from dive.tools import Suspend

T = TypeVar("T")
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
    "mixed": ["Sent."],
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
    mixed = agent_for(
        store,
        "mixed",
        [
            "Hello Grace.",
            Step(raise_before=OverloadedError("overloaded (529)")),
            tool_use(("send_email", {"to": "grace@example.com", "body": "report"})),
        ],
    )
    for text in ("hi", "summarise the report", "email it to Grace"):
        await mixed.run(text)


class RunningViewer:
    """The viewer served by uvicorn on 127.0.0.1 in a thread with its own event loop.

    ``make_store`` runs on that loop (stores bound to a loop, PostgreSQL's pool, work);
    ``options`` go to ``serve_async`` (``token``, ``agent_factory``, ``spans``, ``model``).
    Use as a context manager: ``url`` is the printed URL (with its token).
    """

    def __init__(self, make_store: Callable[[], Awaitable[SessionStore]], **options: Any) -> None:
        self.make_store = make_store
        self.options = options
        self.url = ""
        self.base = ""
        self.token = ""
        self.store: SessionStore | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._server: Any = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._error: BaseException | None = None

    def _main(self) -> None:
        from dive.viewer._serve import serve_async

        async def run() -> None:
            self.loop = asyncio.get_running_loop()
            self.store = await self.make_store()
            await serve_async(self.store, out=io.StringIO(), ready=self._started, **self.options)

        try:
            asyncio.run(run())
        except BaseException as exc:  # reported by __enter__ when start-up failed
            self._error = exc
            self._ready.set()

    def _started(self, url: str, server: Any) -> None:
        self.url, self._server = url, server
        self.base, _, self.token = url.partition("/?token=")
        self._ready.set()

    def call(self, coro: Awaitable[T]) -> T:
        """Run ``coro`` on the server's loop (store reads from the test's thread)."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(_wrap(coro), self.loop).result(timeout=60)

    def __enter__(self) -> RunningViewer:
        self._thread.start()
        self._ready.wait(timeout=60)
        if self._error is not None:
            raise self._error
        return self

    def __exit__(self, *_: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        self._thread.join(timeout=30)


async def _wrap(coro: Awaitable[T]) -> T:
    return await coro
