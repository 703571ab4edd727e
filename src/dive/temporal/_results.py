"""``RunResult`` from where a turn settled: the record is the store's, read by reference."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

import dive.errors as errors
from dive.agent import Agent, RunResult
from dive.errors import DiveError
from dive.messages import Message
from dive.sessions import SessionStore
from dive.temporal._wire import Settled
from dive.turns import Turn

__all__ = ["error_of", "run_result"]


def error_of(type_name: str | None, message: str | None) -> BaseException | None:
    """The dive error named ``type_name`` with ``message`` (a ``DiveError`` if unknown)."""
    if type_name is None:
        return None
    cls = getattr(errors, type_name, None)
    text = message or type_name
    if isinstance(cls, type) and issubclass(cls, DiveError):
        try:
            return cls(text)
        except TypeError:  # a constructor with required extras
            pass
    return DiveError(f"{type_name}: {text}")


async def _locate(store: SessionStore, settled: Settled) -> tuple[Turn, tuple[Message, ...]]:
    session = store.session(settled.session_id)
    snap = await session.load()
    if snap.open_turn is not None and snap.open_turn.id == settled.turn_id:
        return snap.open_turn, snap.history
    turns = await session.turns()
    for i, turn in enumerate(turns):
        if turn.id == settled.turn_id:
            history = tuple(m for t in turns[:i] if not t.superseded for m in t.messages)
            return turn, history
    raise DiveError(
        f"turn {settled.turn_id} is not in session {settled.session_id}: the workflow and the "
        "store disagree (was the session removed or forked away?)"
    )


async def run_result(
    agent: Agent[Any, Any], store: SessionStore, settled: Settled
) -> RunResult[Any]:
    """The ``RunResult`` of the stored turn ``settled`` names."""
    turn, history = await _locate(store, settled)
    raw: Any = None
    if settled.has_output and settled.output_json is not None:
        raw = TypeAdapter(agent.output_type).validate_json(settled.output_json)
    return RunResult(
        status=turn.status if turn.status != "running" else "incomplete",
        turn=turn,
        usage=turn.usage,
        output_messages=turn.messages,
        history=history,
        error=error_of(settled.error_type, settled.error_message),
        stop_reason=settled.stop_reason,
        model=settled.model,
        created_at=turn.created_at,
        finished_at=turn.finished_at,
        raw_output=raw,
        has_output=settled.has_output,
    )
