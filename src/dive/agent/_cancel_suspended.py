"""``cancel_suspended_turn``: close a suspended turn without a model call.

It is an ending like any other (``end_turn``): calls whose tool returned ``Suspend`` become
``unknown`` (they may have dispatched something); calls held at the approval gate, never
started, become ``not_started``; completed siblings keep their results. The outcome is
``canceled`` with ``next="reconcile"`` unless every unknown call's tool is read-only. The
closed turn replaces the suspended one (bounded by ``save_timeout``); ``on_incomplete_turn``
runs; the result is incomplete with ``error=None``; ``turn_ended`` is emitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dive.agent._end import end_turn
from dive.agent._result import RunResult
from dive.agent._run import Run
from dive.agent._runner import Runner
from dive.agent._setup import AgentConfig, TurnSetup
from dive.agent._sink import EventHandler, EventSink
from dive.errors import NoSuspendedTurnError
from dive.messages import Message
from dive.sessions import Session, session_lock
from dive.turns import SuspensionState, Turn
from dive.turns._engine import Incomplete, TurnState, turn_from_suspension

__all__ = ["cancel_suspended"]


async def cancel_suspended(
    agent: Any,
    config: AgentConfig,
    *,
    session: Session | None,
    history: Sequence[Message] | None,
    suspension: SuspensionState | None,
    on_event: EventHandler | None,
    runner: Runner,
) -> RunResult[Any]:
    """See the module docstring."""
    if session is None:
        if suspension is None:
            raise NoSuspendedTurnError("pass session= or suspension= (with history=) to cancel")
        turn = turn_from_suspension(suspension)
        return await _close(agent, config, turn, list(history or ()), None, 0, on_event, runner)
    async with session_lock(session.id):
        snap = await runner.load(session)
        turn = snap.open_turn
        if turn is None or turn.status != "suspended" or turn.suspension is None:
            raise NoSuspendedTurnError(f"session {session.id!r} has no suspended turn to cancel")
        base = list(snap.history)
        return await _close(agent, config, turn, base, session, snap.revision, on_event, runner)


async def _close(
    agent: Any,
    config: AgentConfig,
    turn: Turn,
    base: list[Message],
    session: Session | None,
    revision: int,
    on_event: EventHandler | None,
    runner: Runner,
) -> RunResult[Any]:
    setup = TurnSetup(
        agent=agent,
        config=config,
        model=config.model,
        settings=config.model_settings,
        session=session,
        durable=False,
        cancel=None,
        values={},
        deps=None,
        prompt_cache_key=None,
        stored=turn,
        runner=runner,
    )
    state = TurnState.reopen(
        turn,
        history=base,
        system_prompt="",
        revision=revision,
        definition_of=config.static.definition_of,
        clock=runner.now,
    )
    run = Run(setup, state, EventSink(on_event))
    ending = Incomplete(reason="canceled", error_text="the suspended turn was canceled")
    return await end_turn(run, ending, None)
