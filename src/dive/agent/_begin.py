"""Everything before the turn boundary: argument checks, session guards, turn identity.

Nothing here changes stored state except crash recovery of a ``running`` turn found on load
(closed as ``process_exit`` and written back before anything else happens). Every error
raised here leaves the session as it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from dive.agent._background import BackgroundResult
from dive.agent._hooks import SessionStartResult
from dive.agent._parent import PARENT_CALL
from dive.agent._resume_plan import ResumePlan, plan_resume
from dive.agent._run import Run
from dive.agent._runner import IN_PROCESS, Runner
from dive.agent._setup import AgentConfig, TurnSetup
from dive.agent._sink import EventHandler, EventSink
from dive.errors import (
    ContinueWithInputError,
    InputOnSuspendedSessionError,
    InvalidRunError,
    NoSuspendedTurnError,
    ResumeRequiredError,
    RevisionConflictError,
    UnreconciledToolCallsError,
)
from dive.llm import ModelSettings
from dive.messages import Message
from dive.sessions import Session, SessionSnapshot
from dive.turns import (
    CancelToken,
    Reminder,
    SuspensionState,
    Turn,
    TurnOrigin,
    is_reminder,
    recover_running_turn,
    reminder_message,
)
from dive.turns._engine import CallLedger, TurnState, turn_from_suspension

__all__ = ["CONTINUE_TEXT", "Plan", "RunOptions", "check_arguments", "load_snapshot", "prepare_run"]

CONTINUE_TEXT = (
    "The user asked to continue from where the previous turn stopped. Pick up the unfinished "
    "work without repeating completed steps."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """The arguments of one ``run()``, checked and normalised."""

    new: list[Message]
    history: Sequence[Message] | None
    continue_turn: bool
    background_results: tuple[BackgroundResult, ...]
    reminders: tuple[Reminder, ...]
    on_event: EventHandler | None
    cancel: CancelToken | None
    values: dict[str, Any]
    deps: Any
    prompt_cache_key: str | None
    model_settings: ModelSettings | None
    turn_id: str | None
    expected_revision: int | None
    tool_results: Mapping[str, Any] | None = None
    suspension: SuspensionState | None = None
    runner: Runner = IN_PROCESS


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


@dataclass(frozen=True, slots=True)
class _Resume:
    state: SuspensionState
    stored: Turn
    base: list[Message]
    plan: ResumePlan


def _plan_resume(o: RunOptions, snap: SessionSnapshot | None) -> _Resume:
    """Validate a resume (session-backed or stateless) before anything changes."""
    assert o.tool_results is not None
    if snap is not None:
        _check_ids(snap, o.turn_id, o.expected_revision)
        open_turn = snap.open_turn
        if open_turn is None or open_turn.status != "suspended" or open_turn.suspension is None:
            raise NoSuspendedTurnError(
                "tool_results were given but the session has no suspended turn"
            )
        state, stored, base = open_turn.suspension, open_turn, list(snap.history)
    else:
        if o.suspension is None:
            raise NoSuspendedTurnError(
                "tool_results without a session need suspension= (the saved SuspensionState) "
                "and history= (the history before the suspended turn)"
            )
        state, base = o.suspension, list(o.history or ())
        stored = turn_from_suspension(state)
    return _Resume(state, stored, base, plan_resume(state, o.tool_results))


async def load_snapshot(
    config: AgentConfig, session: Session, runner: Runner = IN_PROCESS
) -> SessionSnapshot:
    """Load, closing a turn a dead process left ``running`` (written back, then reloaded)."""
    snap = await runner.load(session)
    turn = snap.open_turn
    if turn is not None and turn.status == "running":
        closed = recover_running_turn(turn, config.static.read_only, at=runner.now())
        await runner.write(session, closed, expected_revision=snap.revision)
        snap = await runner.load(session)
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
    config: AgentConfig,
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
        and config.incomplete_turns.require_reconcile
        and latest is not None
        and latest.next == "reconcile"
    ):
        raise UnreconciledToolCallsError(
            "the last turn ended with tool calls of unknown outcome; check their effects, then "
            "run(continue_turn=True) or session.remove_last_turn() before sending new input"
        )


def _continuation(
    history: Sequence[Message], record: list[Message], plan: Plan, at: datetime
) -> None:
    tail = record[-1] if record else (history[-1] if history else None)
    msg = reminder_message(Reminder(name="turn-continue", content=CONTINUE_TEXT), at=at)
    if tail is not None and tail.role == "assistant":
        plan.record.append(msg)
    else:
        plan.model_only.append(msg)


def _without_note(messages: Sequence[Message]) -> list[Message]:
    out = list(messages)
    while out and is_reminder(out[-1], "turn-incomplete"):
        out.pop()
    return out


def _background_reminder(results: Sequence[BackgroundResult], at: datetime) -> Message:
    lines = [
        f"- {r.name} (tool call {r.tool_call_id}"
        f"{f', task {r.task_id}' if r.task_id else ''}, started in turn {r.turn_id}): "
        f"{'error: ' if r.result.is_error else ''}{r.result.text}"
        for r in results
    ]
    content = "Results of work that finished after its turn ended (background tasks):\n"
    reminder = Reminder(name="background-tasks", content=content + "\n".join(lines))
    return reminder_message(reminder, at=at)


def plan_turn(
    config: AgentConfig,
    runner: Runner,
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
            config,
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
            _continuation(base, plan.record, plan, runner.now())
            return plan
        if not base:
            raise InvalidRunError("continue_turn=True needs a history to continue")
        plan = Plan(turn_id=runner.new_turn_id(), origin=TurnOrigin(kind="continue"), history=base)
        _continuation(base, [], plan, runner.now())
        return plan
    if background_results and not new_input:
        origin = TurnOrigin(kind="background", turn_id=background_results[0].turn_id)
    else:
        origin = TurnOrigin(kind="input")
    parent = PARENT_CALL.get()  # started from inside another run's tool call (a subagent)
    if parent is not None:
        origin = replace(
            origin, parent_turn_id=parent.turn_id, parent_tool_call_id=parent.tool_call_id
        )
    plan = Plan(turn_id=runner.new_turn_id(), origin=origin, history=base)
    if background_results:
        plan.record.append(_background_reminder(background_results, runner.now()))
    plan.record.extend(new_input)
    return plan


def _new_state(
    plan: Plan, config: AgentConfig, system_prompt: str, revision: int, runner: Runner
) -> TurnState:
    """The turn state of a new turn, or of an incomplete turn a continuation folds into."""
    folded = plan.folded
    if folded is None:
        return TurnState(
            turn_id=plan.turn_id,
            origin=plan.origin,
            history=plan.history,
            system_prompt=system_prompt,
            revision=revision,
            clock=runner.now,
        )
    return TurnState(
        turn_id=plan.turn_id,
        origin=plan.origin,
        history=plan.history,
        system_prompt=system_prompt,
        ledger=CallLedger.restore(
            folded.tool_calls,
            executed=folded.counters.executed_tool_calls,
            definition_of=config.static.definition_of,
        ),
        prior_usage=folded.usage,
        counters=folded.counters.with_fresh_budget(),  # a continuation grants one
        revision=revision,
        created_at=folded.created_at,
        clock=runner.now,
    )


async def _session_start(run: Run) -> None:
    """``session_start`` hooks: their messages go ahead of the input (errors raise)."""
    out = await run.hook("session_start", session_start_source="new")
    for value in out.returned:
        if isinstance(value, SessionStartResult):
            run.state.transcript.seed(value.messages, persist=value.persist)


async def prepare_run(
    setup: TurnSetup,
    o: RunOptions,
    snap: SessionSnapshot | None,
    system_prompt: str,
) -> Run:
    """Everything before the boundary: plan, guards, turn state, ``session_start``."""
    revision = snap.revision if snap is not None else 0
    config = setup.config
    if o.tool_results is not None:
        r = _plan_resume(o, snap)
        setup = replace(setup, resume=r.plan, stored=r.stored)
        state = TurnState.reopen(
            r.stored,
            history=r.base,
            system_prompt=system_prompt,
            revision=revision,
            definition_of=config.static.definition_of,
            clock=setup.runner.now,
        )
        return Run(setup, state, EventSink(o.on_event))
    runner = setup.runner
    plan = plan_turn(
        config,
        runner,
        snap=snap,
        history=o.history,
        new_input=o.new,
        continue_turn=o.continue_turn,
        background_results=o.background_results,
        turn_id=o.turn_id,
        expected_revision=o.expected_revision,
    )
    state = _new_state(plan, config, system_prompt, revision, runner)
    run = Run(setup, state, EventSink(o.on_event))
    fresh = not plan.history and not o.continue_turn and plan.folded is None
    if config.hooks.session_start and fresh:
        await _session_start(run)
    for m in plan.record:
        state.transcript.add(m)
    for m in plan.model_only:
        state.transcript.add_model_only(m)
    if o.reminders:
        at = runner.now()
        for rem in o.reminders:
            state.transcript.add_model_only(reminder_message(rem, at=at))
    return run
