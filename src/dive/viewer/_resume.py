"""Resuming turns in the serving process, with the ``agent_factory`` the viewer was given.

``agent_factory(session_id)`` returns an ``Agent`` bound to that session of the store (or an
awaitable of one). A decision starts ``agent.run(tool_results=..., turn_id=...)`` as a task
of this process, so the page answers at once and follows the turn by its live updates; the
outcome (or why the resume was refused) becomes the session's notice. Closing the viewer
waits a little for running resumes, then cancels them (the turn's own rules decide what a
cancelled resume leaves: a suspended turn stays suspended until its boundary).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any, cast

from dive.agent import Agent
from dive.errors import DiveError
from dive.viewer._live import Changes

__all__ = ["AgentFactory", "Resumer"]

AgentFactory = Callable[[str], Any]
"""``factory(session_id) -> Agent`` (or an awaitable of one) bound to that session."""

_log = logging.getLogger("dive.viewer")


class Resumer:
    """Resumes running in this process, by session.

    Args:
        factory: the agent factory.
        changes: bumped when a resume ends.
    """

    def __init__(self, factory: AgentFactory, changes: Changes) -> None:
        self.factory = factory
        self.changes = changes
        self.notices: dict[str, str] = {}
        self._tasks: dict[str, set[asyncio.Task[None]]] = {}

    def running(self, session_id: str) -> bool:
        """Whether a resume of ``session_id`` is running here."""
        return bool(self._tasks.get(session_id))

    @property
    def count(self) -> int:
        """How many resumes are running."""
        return sum(len(t) for t in self._tasks.values())

    def start(self, session_id: str, turn_id: str, results: Mapping[str, Any]) -> None:
        """Start resuming ``turn_id`` of ``session_id`` with ``results``."""
        task = asyncio.create_task(self._run(session_id, turn_id, dict(results)))
        tasks = self._tasks.setdefault(session_id, set())
        tasks.add(task)
        self.notices[session_id] = f"resuming turn {turn_id} in this viewer…"

        def done(t: asyncio.Task[None]) -> None:
            tasks.discard(t)
            if not tasks:
                self._tasks.pop(session_id, None)
            self.changes.bump()

        task.add_done_callback(done)
        self.changes.bump()

    async def _agent(self, session_id: str) -> Agent[Any, Any]:
        made = self.factory(session_id)
        agent: object = await made if inspect.isawaitable(made) else made
        if not isinstance(agent, Agent):
            raise TypeError(f"the agent factory returned {type(agent).__name__}, not an Agent")
        if agent.session is None or agent.session.id != session_id:
            raise TypeError(
                f"the agent factory's agent is not bound to session {session_id!r}: build it "
                "with Agent(session=store.session(session_id))"
            )
        return cast("Agent[Any, Any]", agent)

    async def _run(self, session_id: str, turn_id: str, results: dict[str, Any]) -> None:
        try:
            agent = await self._agent(session_id)
            result = await agent.run(tool_results=results, turn_id=turn_id)
        except DiveError as exc:
            self.notices[session_id] = f"the resume was refused: {exc}"
            return
        except Exception as exc:
            _log.exception("resuming session %s failed", session_id)
            self.notices[session_id] = f"the resume failed: {type(exc).__name__}: {exc}"
            return
        turn = result.turn
        reason = f" ({turn.outcome.reason})" if turn.outcome is not None else ""
        self.notices[session_id] = f"resumed: turn {turn.id} is {turn.status}{reason}"

    async def aclose(self, *, grace: float = 5.0) -> None:
        """Wait up to ``grace`` seconds for running resumes, then cancel the rest."""
        tasks = [t for ts in self._tasks.values() for t in ts]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
