"""The turn workflow: the agent's own loop, run with ``TemporalRunner`` as its I/O seam.

One workflow runs one turn of one session (its id names the session, so a session has one
open turn workflow at a time). The loop's decisions run here, deterministically (the clock,
ids and sleeps are the workflow's); every effect is an activity (see ``_runner``). Where
the turn comes to rest is *settled* (the ``dive.settled`` update returns each in order):

    start ─► loop ─► completed / incomplete → done
                └─► suspended → wait for ``dive.resume`` (tool results, approvals) → loop …

Cancelling the workflow is a hard cancel (the loop's own: running calls are cancelled and
recorded ``unknown``, the turn is saved ``canceled``); the ``dive.soft_cancel`` signal is
the loop's soft cancel (running calls finish, the turn ends before its next model call; a
suspended turn is closed). While a suspended turn waits, the workflow continues as new once
its history is long, carrying only references.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta
from typing import Any, cast

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError
from temporalio.workflow import HandlerUnfinishedPolicy

with workflow.unsafe.imports_passed_through():
    from pydantic import TypeAdapter

    from dive.agent import RunResult
    from dive.errors import DiveError
    from dive.messages import messages_from_json
    from dive.sessions import Session, SessionStore
    from dive.temporal._codec import decode_tool_results
    from dive.temporal._names import names_of_workflow_type
    from dive.temporal._registry import lookup
    from dive.temporal._runner import TemporalRunner
    from dive.temporal._wire import LiveTurn, Settled, TextChunk, TurnInput
    from dive.turns import CancelToken, Turn

__all__ = ["DiveTurnWorkflow", "settled_of"]


class _NoStore:
    """The store as workflow code sees it: unreachable except through the runner."""

    def __getattr__(self, name: str) -> Any:
        raise DiveError(
            f"workflow code reached the session store directly ({name}); use the runner"
        )


def settled_of(session_id: str, result: RunResult[Any]) -> Settled:
    """Where ``result``'s turn came to rest, by reference."""
    error = result.error
    turn = result.turn
    status = turn.status if turn.status != "running" else "incomplete"
    return Settled(
        session_id=session_id,
        turn_id=turn.id,
        status=status,
        revision=turn.revision,
        stop_reason=result.stop_reason,
        model=result.model,
        output_json=TypeAdapter(Any).dump_json(result.raw_output).decode()
        if result.has_output
        else None,
        has_output=result.has_output,
        error_type=type(error).__name__ if error is not None else None,
        error_message=str(error) if error is not None else None,
    )


def _closed(session_id: str, turn: Turn, revision: int) -> Settled:
    outcome = turn.outcome
    status = turn.status if turn.status != "running" else "incomplete"
    return Settled(
        session_id=session_id,
        turn_id=turn.id,
        status=status,
        revision=revision,
        error_message=outcome.error if outcome is not None else None,
    )


@workflow.defn(dynamic=True)
class DiveTurnWorkflow:
    """The dynamic workflow behind every ``TemporalAgent`` (its type names the agent)."""

    def __init__(self) -> None:
        self._session_id = ""
        self._runner: TemporalRunner | None = None
        self._token = CancelToken()
        self._status = "running"
        self._settled: list[Settled] = []
        self._resume: tuple[int, str] | None = None
        self._resume_seq = 0
        self._resume_done: dict[int, BaseException | None] = {}
        self._accepted: list[str] = []
        self._text: list[TextChunk] = []
        self._ready = False

    # --- handlers -----------------------------------------------------------------------------

    @workflow.query(name="dive.turn")
    def turn(self) -> LiveTurn:
        """Where the turn stands: ids, revision, status, the calls running now."""
        runner = self._runner
        stored = runner.stored if runner is not None else None
        last = self._settled[-1] if self._settled else None
        return LiveTurn(
            session_id=self._session_id,
            turn_id=stored.id if stored is not None else (last.turn_id if last else ""),
            status=self._status,  # pyright: ignore[reportArgumentType]
            step=runner.model_calls if runner is not None else 0,
            revision=runner.revision if runner is not None else 0,
            running_calls=tuple(runner.running) if runner is not None else (),
            settled_count=len(self._settled),
        )

    @workflow.query(name="dive.text")
    def text_since(self, offset: int) -> list[TextChunk]:
        """Live text chunks from ``offset`` on (see ``TextChunk`` for retried attempts)."""
        return self._text[offset:]

    @workflow.signal(name="dive.text")
    def add_text(self, chunk: TextChunk) -> None:
        """A model activity's live text."""
        self._text.append(chunk)

    @workflow.signal(name="dive.soft_cancel")
    def soft_cancel(self) -> None:
        """The loop's soft cancel: end the turn before its next model call."""
        self._token.soft_cancel("soft cancel through the workflow")

    @workflow.update(name="dive.settled", unfinished_policy=HandlerUnfinishedPolicy.ABANDON)
    async def settled(self, index: int) -> Settled:
        """The ``index``-th place the turn came to rest (waits for it)."""
        await workflow.wait_condition(lambda: len(self._settled) > index)
        return self._settled[index]

    @workflow.update(name="dive.resume")
    async def resume(self, tool_results_json: str) -> None:
        """Resume the suspended turn with ``tool_results`` (returns once they are taken)."""
        await workflow.wait_condition(lambda: self._ready)  # a handler may run before ``run``
        if self._status != "suspended" or self._resume is not None:
            if tool_results_json in self._accepted:
                return None  # the same results again: already taken
            raise ApplicationError(
                "the turn is not suspended waiting for tool results (it has moved on)",
                type="ToolCallNotPendingError",
                non_retryable=True,
            )
        self._resume_seq += 1
        seq = self._resume_seq
        self._resume = (seq, tool_results_json)
        await workflow.wait_condition(lambda: seq in self._resume_done)
        refused = self._resume_done.pop(seq)
        if refused is not None:
            raise ApplicationError(str(refused), type=type(refused).__name__, non_retryable=True)
        return None

    # --- the turn -----------------------------------------------------------------------------

    @workflow.run
    async def run(self, args: Sequence[RawValue]) -> Settled:
        """Run the turn, and each resume of it, to its end."""
        inp = workflow.payload_converter().from_payload(args[0].payload, TurnInput)
        names = names_of_workflow_type(workflow.info().workflow_type)
        owner = lookup(names.name)
        agent = owner.workflow_agent
        self._session_id = inp.session_id
        self._settled = list(inp.settled)
        runner = self._runner = TemporalRunner(
            names,
            heartbeat=timedelta(seconds=inp.heartbeat_timeout),
            deps_json=inp.deps_json,
            live_text=inp.live_text,
            static_tools=agent.tool_definitions,
            static_system=agent.system_prompt(),
        )
        session = Session(cast(SessionStore, _NoStore()), inp.session_id)
        deps = owner.decode_deps(inp.deps_json)
        try:
            if self._settled and self._settled[-1].status == "suspended":
                settled = self._settled[-1]  # carried over by continue-as-new: wait again
                self._status = "suspended"
                self._ready = True
            else:
                self._ready = True
                new = messages_from_json(inp.input_json) if inp.input_json else None
                result = await agent.run(
                    list(new) if new else None,
                    session=session,
                    deps=deps,
                    runner=runner,
                    cancel=self._token,
                )
                settled = self._settle(settled_of(inp.session_id, result))
            while settled.status == "suspended":
                self._maybe_continue_as_new(inp)
                settled = await self._resumed(agent, session, deps) or settled
        except asyncio.CancelledError:
            settled = self._settle(await self._after_cancel(agent, session))
        except DiveError as exc:  # refused before the turn began (the session moved on, …)
            raise ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True) from None
        await workflow.wait_condition(workflow.all_handlers_finished)
        return settled

    def _settle(self, settled: Settled) -> Settled:
        self._status = settled.status
        self._settled.append(settled)
        return settled

    async def _resumed(self, agent: Any, session: Session, deps: Any) -> Settled | None:
        """Wait for a resume (or a cancel) and take it; None when it was refused."""
        runner = self._runner
        assert runner is not None
        await workflow.wait_condition(
            lambda: self._resume is not None or self._token.soft_cancel_requested
        )
        if self._resume is None:  # soft cancel while suspended: close the turn
            return self._settle(await self._close_suspended(agent, session))
        seq, results = self._resume
        self._status = "running"
        try:
            result = await agent.run(
                session=session,
                tool_results=decode_tool_results(results),
                deps=deps,
                runner=runner,
                cancel=self._token,
            )
        except DiveError as exc:  # refused before the turn boundary: nothing changed
            self._status = "suspended"
            self._resume = None
            self._resume_done[seq] = exc
            return None
        self._resume = None
        self._accepted.append(results)
        self._resume_done[seq] = None
        return self._settle(settled_of(self._session_id, result))

    async def _after_cancel(self, agent: Any, session: Session) -> Settled:
        """A hard cancel: the loop saved the turn ``canceled``; a waiting turn is closed."""
        runner = self._runner
        assert runner is not None
        if self._status == "suspended" and self._resume is None:
            return await self._close_suspended(agent, session)
        written = runner.written
        if written is None:
            raise ApplicationError(
                "the turn was cancelled before it began", type="RunCanceledError"
            )
        return _closed(self._session_id, written, runner.revision)

    async def _close_suspended(self, agent: Any, session: Session) -> Settled:
        """Cancel the suspended turn; if it was resumed elsewhere, where it stands now."""
        runner = self._runner
        assert runner is not None
        try:
            result = await agent.cancel_suspended_turn(session=session, runner=runner)
        except DiveError:  # no longer suspended: a plain agent.run(tool_results=...) took it
            last = self._settled[-1]
            turns = await runner.load_turns(session)
            stored = next((t for t in turns if t.id == last.turn_id), None)
            if stored is None:
                raise
            return _closed(self._session_id, stored, runner.revision)
        return settled_of(self._session_id, result)

    def _maybe_continue_as_new(self, inp: TurnInput) -> None:
        info = workflow.info()
        long = info.get_current_history_length() >= inp.max_history_events
        if not (long or info.is_continue_as_new_suggested()) or self._resume is not None:
            return
        carried = TurnInput(
            session_id=inp.session_id,
            deps_json=inp.deps_json,
            live_text=inp.live_text,
            max_history_events=inp.max_history_events,
            heartbeat_timeout=inp.heartbeat_timeout,
            settled=tuple(self._settled),
        )
        again: Any = workflow.continue_as_new
        again(carried, workflow=info.workflow_type)
