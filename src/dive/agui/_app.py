"""``agui_app``: a dive agent behind the AG-UI protocol, a plain Starlette ASGI app.

``POST /`` takes a ``RunAgentInput`` and streams the run as server-sent AG-UI events (see
``_events``). The AG-UI thread is the dive session (``thread_id`` is the session id) when a
store is given; the new input is the trailing user message, and the session holds the
history. Without a store the run is stateless: the history is the input's messages, and a
suspended run's state is kept in this process until the interrupt is answered.

State: the input ``state`` is ``ctx.values["state"]`` in tools (and hooks); a tool that
changes it in place is followed by a ``STATE_SNAPSHOT``. Human in the loop: a suspended
turn ends the run with an interrupt per pending call (approvals included); the next run's
``resume`` entries answer them (see ``_input``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from ag_ui.core import BaseEvent, RunAgentInput, UserMessage
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from dive.agent import Agent
from dive.agui._events import Translator
from dive.agui._input import dive_messages, resume_results, user_content
from dive.errors import UserError
from dive.messages import Message
from dive.sessions import Session, SessionStore, validate_session_id
from dive.turns import SuspensionState

__all__ = ["agui_app"]


@dataclass(frozen=True, slots=True)
class _Parked:
    """A stateless suspended run: the history before its turn and its suspension."""

    history: tuple[Message, ...]
    suspension: SuspensionState


class _Runner:
    def __init__(self, agent: Agent[Any, Any], store: SessionStore | None) -> None:
        self.agent = agent
        self.store = store
        self.parked: dict[str, _Parked] = {}

    def _new_input(self, run: RunAgentInput) -> tuple[list[Message], Message]:
        if not run.messages or not isinstance(run.messages[-1], UserMessage):
            raise UserError("nothing to run: end the messages with a user message, or resume")
        last = run.messages[-1]
        history = dive_messages(run.messages[:-1])
        return history, Message(role="user", content=user_content(last), id=last.id)

    async def kwargs(self, run: RunAgentInput) -> dict[str, Any]:
        """``run()`` arguments for this input (raises ``UserError`` on bad input)."""
        if self.store is not None:
            return await self._session_kwargs(run, self.store.session(run.thread_id))
        if run.resume:
            parked = self.parked.get(run.thread_id)
            if parked is None:
                raise UserError(
                    f"thread {run.thread_id!r} has no interrupted run in this process to resume"
                )
            pending = parked.suspension.pending_tool_calls
            return {
                "session": None,
                "history": list(parked.history),
                "suspension": parked.suspension,
                "tool_results": resume_results(pending, run.resume),
            }
        history, message = self._new_input(run)
        return {"session": None, "history": history, "input": message}

    async def _session_kwargs(self, run: RunAgentInput, session: Session) -> dict[str, Any]:
        snap = await session.load()
        turn = snap.open_turn
        if run.resume:
            if turn is None or turn.suspension is None:
                raise UserError(f"thread {run.thread_id!r} has no interrupted run to resume")
            pending = turn.suspension.pending_tool_calls
            return {"session": session, "tool_results": resume_results(pending, run.resume)}
        if turn is not None and turn.suspension is not None:
            ids = ", ".join(c.id for c in turn.suspension.pending_tool_calls)
            raise UserError(
                f"thread {run.thread_id!r} waits for answers to its interrupts ({ids}); "
                "send them as resume entries"
            )
        _, message = self._new_input(run)
        return {"session": session, "input": message}

    def park(self, thread_id: str, kwargs: dict[str, Any], result: Any) -> None:
        if self.store is not None:
            return
        if result.status == "suspended" and result.turn.suspension is not None:
            self.parked[thread_id] = _Parked(tuple(result.history), result.turn.suspension)
        else:
            self.parked.pop(thread_id, None)

    async def events(self, run: RunAgentInput) -> AsyncGenerator[BaseEvent]:
        values: dict[str, Any] = {"state": run.state}
        translator = Translator(run.thread_id, run.run_id, values)
        for e in translator.start(with_state=run.state is not None):
            yield e
        try:
            kwargs = await self.kwargs(run)
            stream = self.agent.stream(values=values, **kwargs)
            async for event in stream:
                for e in translator.event(event):
                    yield e
        except Exception as exc:  # before the boundary: bad input, a conflict, a store fault
            for e in translator.error(exc):
                yield e
            return
        result = stream.result
        self.park(run.thread_id, kwargs, result)
        for e in translator.finish(result):
            yield e


def agui_app(agent: Agent[Any, Any], *, store: SessionStore | None = None) -> Starlette:
    """Serve ``agent`` to AG-UI front ends (CopilotKit and the like).

    Args:
        agent: the agent to run.
        store: the session store of the threads (each ``thread_id`` is a session id).
            None runs statelessly: the front end's messages are the history, and a run
            interrupted for approval or input can be resumed in this process only.

    Returns:
        A Starlette app: ``POST /`` with a ``RunAgentInput`` answers with the run as
        server-sent events.
    """
    runner = _Runner(agent, store)

    async def run(request: Request) -> Response:
        try:
            payload = RunAgentInput.model_validate(await request.json())
            if store is not None:
                validate_session_id(payload.thread_id)
        except (ValidationError, ValueError) as exc:
            return JSONResponse({"error": str(exc)}, status_code=422)
        encoder = EventEncoder(accept=request.headers.get("accept", ""))

        async def body() -> AsyncGenerator[str]:
            async for event in runner.events(payload):
                yield encoder.encode(event)

        return StreamingResponse(body(), media_type=encoder.get_content_type())

    return Starlette(routes=[Route("/", run, methods=["POST"])])
