"""Everything before the turn boundary: argument checks, session guards, turn identity.

Nothing here changes stored state except crash recovery of a ``running`` turn found on load
(closed as ``process_exit`` and written back before anything else happens). Every error
raised here leaves the session as it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dive.agent._background import BackgroundResult
from dive.agent._records import SuspensionState, Turn, TurnOrigin, new_turn_id
from dive.agent._recover import recover_running_turn
from dive.agent._reminders import Reminder, is_reminder, reminder_message
from dive.agent._resume import ResumeInfo, plan_resume, split_turn_messages
from dive.errors import (
    ContinueWithInputError,
    InputOnSuspendedSessionError,
    InvalidRunError,
    NoSuspendedTurnError,
    ResumeRequiredError,
    RevisionConflictError,
    UnreconciledToolCallsError,
)
from dive.messages import Message
from dive.sessions._protocol import Session, SessionSnapshot

if TYPE_CHECKING:
    from dive.agent._agent import Agent

__all__ = ["CONTINUE_TEXT", "Plan", "check_arguments", "load_snapshot", "plan_turn"]

CONTINUE_TEXT = (
    "The user asked to continue from where the previous turn stopped. Pick up the unfinished "
    "work without repeating completed steps."
)


@dataclass(slots=True)
class Plan:
    """How the turn starts: identity, history and what goes into the record first."""

    turn_id: str
    origin: TurnOrigin
    history: list[Message]
    record: list[Message] = field(default_factory=list[Message])
    model_only: list[Message] = field(default_factory=list[Message])
    folded: Turn | None = None


def check_arguments(
    *,
    input: object,
    history: object,
    session: Session | None,
    continue_turn: bool,
    background_results: Sequence[BackgroundResult],
    tool_results: object = None,
    suspension: object = None,
) -> None:
    """Reject invalid combinations before anything is read."""
    if continue_turn and (input is not None or tool_results is not None):
        raise ContinueWithInputError(
            "continue_turn=True continues the open turn; it cannot be combined with input or "
            "tool_results"
        )
    if input is not None and tool_results is not None:
        raise InvalidRunError(
            "input and tool_results cannot be combined: resume first, then send new input"
        )
    if (history is not None or suspension is not None) and session is not None:
        raise InvalidRunError(
            "history= and suspension= are only for stateless runs; with a session, the "
            "session is the only source of history and suspension state"
        )
    if suspension is not None and tool_results is None:
        raise InvalidRunError("suspension= needs tool_results= to resume it")
    if input is None and not continue_turn and not background_results and tool_results is None:
        raise InvalidRunError(
            "nothing to do: pass input, tool_results, continue_turn=True or background_results"
        )


def plan_resume_turn(
    agent: Agent[Any],
    *,
    snap: SessionSnapshot | None,
    history: Sequence[Message] | None,
    suspension: SuspensionState | None,
    tool_results: Mapping[str, Any],
    turn_id: str | None,
    expected_revision: int | None,
) -> tuple[Plan, ResumeInfo, SuspensionState]:
    """Validate a resume (session-backed or stateless) before anything changes."""
    folded: Turn | None = None
    if snap is not None:
        _check_ids(snap, turn_id, expected_revision)
        open_turn = snap.open_turn
        if open_turn is None or open_turn.status != "suspended" or open_turn.suspension is None:
            raise NoSuspendedTurnError(
                "tool_results were given but the session has no suspended turn"
            )
        state, folded, base = open_turn.suspension, open_turn, list(snap.history)
    else:
        if suspension is None:
            raise NoSuspendedTurnError(
                "tool_results without a session need suspension= (the saved SuspensionState) "
                "and history= (the history before the suspended turn)"
            )
        state, base = suspension, list(history or ())
    info = plan_resume(state, tool_results)
    record, _ = split_turn_messages(state.turn_messages)
    plan = Plan(
        turn_id=state.turn_id, origin=state.origin, history=base, record=record, folded=folded
    )
    return plan, info, state


async def load_snapshot(agent: Agent[Any], session: Session) -> SessionSnapshot:
    """Load, closing a turn a dead process left ``running`` (written back, then reloaded)."""
    snap = await session.load()
    turn = snap.open_turn
    if turn is not None and turn.status == "running":
        closed = recover_running_turn(turn, agent.is_read_only)
        await session.checkpoint(closed, expected_revision=snap.revision)
        snap = await session.load()
    return snap


def _check_ids(snap: SessionSnapshot, turn_id: str | None, expected_revision: int | None) -> None:
    open_turn = snap.open_turn
    if turn_id is not None and (open_turn is None or open_turn.id != turn_id):
        raise RevisionConflictError(
            f"turn {turn_id} is not the session's open turn "
            f"({open_turn.id if open_turn else 'none'}); reload the session"
        )
    if expected_revision is not None and expected_revision != snap.revision:
        raise RevisionConflictError(
            f"expected revision {expected_revision} but the session is at {snap.revision}"
        )


def _guards(
    agent: Agent[Any],
    snap: SessionSnapshot,
    *,
    new_input: bool,
    continue_turn: bool,
    turn_id: str | None,
    expected_revision: int | None,
) -> None:
    _check_ids(snap, turn_id, expected_revision)
    open_turn = snap.open_turn
    if open_turn is not None and open_turn.status == "suspended":
        if continue_turn:
            raise ResumeRequiredError(
                f"turn {open_turn.id} is suspended; resume it with tool_results= or close it "
                "with cancel_suspended_turn()"
            )
        raise InputOnSuspendedSessionError(
            f"turn {open_turn.id} is suspended waiting for tool results; resume it with "
            "run(tool_results={call_id: result}) or close it with cancel_suspended_turn()"
        )
    latest = snap.latest_outcome
    if (
        new_input
        and agent.incomplete_turns.require_reconcile
        and latest is not None
        and latest.next == "reconcile"
    ):
        raise UnreconciledToolCallsError(
            "the last turn ended with tool calls of unknown outcome; check their effects, then "
            "run(continue_turn=True) or session.remove_last_turn() before sending new input"
        )


def _continuation(history: Sequence[Message], record: list[Message], plan: Plan) -> None:
    tail = record[-1] if record else (history[-1] if history else None)
    msg = reminder_message(Reminder(name="turn-continue", content=CONTINUE_TEXT))
    if tail is not None and tail.role == "assistant":
        plan.record.append(msg)
    else:
        plan.model_only.append(msg)


def _without_note(messages: Sequence[Message]) -> list[Message]:
    out = list(messages)
    while out and is_reminder(out[-1], "turn-incomplete"):
        out.pop()
    return out


def _background_reminder(results: Sequence[BackgroundResult]) -> Message:
    lines = [
        f"- {r.name} (tool call {r.tool_call_id}, started in turn {r.turn_id}): "
        f"{'error: ' if r.result.is_error else ''}{r.result.text}"
        for r in results
    ]
    content = "Results of tool calls that were still running when their turn ended:\n"
    return reminder_message(Reminder(name="background-tasks", content=content + "\n".join(lines)))


def plan_turn(
    agent: Agent[Any],
    *,
    snap: SessionSnapshot | None,
    history: Sequence[Message] | None,
    new_input: list[Message],
    continue_turn: bool,
    background_results: Sequence[BackgroundResult],
    turn_id: str | None = None,
    expected_revision: int | None = None,
) -> Plan:
    """Decide the turn's identity and starting messages."""
    if snap is not None:
        _guards(
            agent,
            snap,
            new_input=bool(new_input),
            continue_turn=continue_turn,
            turn_id=turn_id,
            expected_revision=expected_revision,
        )
        base = list(snap.history)
        open_turn = snap.open_turn
        if open_turn is not None and not (continue_turn and open_turn.status == "incomplete"):
            base.extend(open_turn.messages)
            open_turn = None
    else:
        base, open_turn = list(history or ()), None
    if continue_turn:
        if open_turn is not None:
            plan = Plan(
                turn_id=open_turn.id,
                origin=open_turn.origin,
                history=base,
                record=_without_note(open_turn.messages),
                folded=open_turn,
            )
            _continuation(base, plan.record, plan)
            return plan
        if not base:
            raise InvalidRunError("continue_turn=True needs a history to continue")
        plan = Plan(turn_id=new_turn_id(), origin=TurnOrigin(kind="continue"), history=base)
        _continuation(base, [], plan)
        return plan
    if background_results and not new_input:
        origin = TurnOrigin(kind="background", turn_id=background_results[0].turn_id)
    else:
        origin = TurnOrigin(kind="input")
    plan = Plan(turn_id=new_turn_id(), origin=origin, history=base)
    if background_results:
        plan.record.append(_background_reminder(background_results))
    plan.record.extend(new_input)
    return plan
