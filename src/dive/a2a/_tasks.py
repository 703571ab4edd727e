"""A2A tasks are dive turns: ids, lookup in the session store, and the projection.

The dive session id *is* the A2A context id. A task is one turn of that session: the turn's
input message carries the task id in its metadata (``a2a.task_id``), so the task is found
again by any process reading the same store, after a restart too. The task id names its
context (``<hex>~<context id>``; ``~`` never occurs in a session id), so ``tasks/get`` and
``tasks/cancel``, which carry only the task id, know which session to read.

Turn status → task state: ``running`` → working; ``completed`` → completed (the answer as
the ``answer`` artifact); ``suspended`` → input-required, or auth-required when a pending
call asks for authorization (the first pending call's prompt is the status message);
``incomplete`` with reason ``canceled`` → canceled; any other ``incomplete`` → failed, the
outcome reason (and error) in the status message and the kept output as the ``partial``
artifact.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from a2a.types import Artifact, Task, TaskNotFoundError, TaskState, TaskStatus
from google.protobuf.timestamp_pb2 import Timestamp

from dive.a2a._parts import (
    agent_message,
    answer_text,
    data_part,
    history_messages,
    text_part,
)
from dive.messages import Message
from dive.sessions import SessionStore, validate_session_id
from dive.turns import PendingToolCall, Turn

__all__ = [
    "TASK_KEY",
    "context_of",
    "find_turn",
    "new_task_id",
    "pending_prompt",
    "task_of_turn",
    "task_state",
]

TASK_KEY = "a2a.task_id"
"""The metadata key of the input message that names the turn's task."""

_SEP = "~"


def new_task_id(context_id: str) -> str:
    """A fresh task id in ``context_id``."""
    return f"{uuid.uuid4().hex}{_SEP}{context_id}"


def context_of(task_id: str) -> str:
    """The context (session) id a task id names, or ``TaskNotFoundError``."""
    _, sep, context_id = task_id.partition(_SEP)
    if not sep:
        raise TaskNotFoundError(f"task {task_id!r} was not created by this agent")
    try:
        return validate_session_id(context_id)
    except Exception as exc:
        raise TaskNotFoundError(f"task {task_id!r} was not created by this agent") from exc


def _names_task(message: Message, task_id: str) -> bool:
    return message.metadata.get(TASK_KEY) == task_id


async def find_turn(store: SessionStore, task_id: str) -> Turn | None:
    """The turn that is ``task_id`` (the latest record naming it), or None."""
    turns = await store.turns(context_of(task_id))
    for turn in reversed(turns):
        if any(_names_task(m, task_id) for m in turn.messages):
            return turn
    return None


def task_state(turn: Turn) -> TaskState:
    """The A2A state of a turn (see the module docstring)."""
    match turn.status:
        case "running":
            return TaskState.TASK_STATE_WORKING
        case "completed":
            return TaskState.TASK_STATE_COMPLETED
        case "suspended":
            pending = _pending(turn)
            if pending and pending[0].reason == "auth_required":
                return TaskState.TASK_STATE_AUTH_REQUIRED
            return TaskState.TASK_STATE_INPUT_REQUIRED
        case "incomplete":
            outcome = turn.outcome
            if outcome is not None and outcome.reason == "canceled":
                return TaskState.TASK_STATE_CANCELED
            return TaskState.TASK_STATE_FAILED


def _pending(turn: Turn) -> Sequence[PendingToolCall]:
    return turn.suspension.pending_tool_calls if turn.suspension is not None else ()


def pending_prompt(call: PendingToolCall) -> str:
    """What a pending call asks of whoever answers the task."""
    if call.prompt:
        return call.prompt
    if call.reason == "approval_required":
        return f"Approve the call to {call.name}? Answer yes or no."
    return f"The tool {call.name} needs input."


def _pending_data(calls: Sequence[PendingToolCall]) -> list[dict[str, object]]:
    return [
        {
            "id": c.id,
            "name": c.name,
            "reason": c.reason,
            "prompt": pending_prompt(c),
            "input": dict(c.input),
        }
        for c in calls
    ]


def _timestamp(at: datetime | None) -> Timestamp | None:
    if at is None:
        return None
    ts = Timestamp()
    ts.FromDatetime(at)
    return ts


def _status(turn: Turn, task_id: str, context_id: str) -> TaskStatus:
    state = task_state(turn)
    status = TaskStatus(state=state)
    at = _timestamp(turn.finished_at or turn.created_at)
    if at is not None:
        status.timestamp.CopyFrom(at)
    parts = None
    if turn.status == "suspended":
        pending = _pending(turn)
        if pending:
            parts = [
                text_part(pending_prompt(pending[0])),
                data_part({"pending_tool_calls": _pending_data(pending)}),
            ]
    elif turn.status == "incomplete" and turn.outcome is not None:
        outcome = turn.outcome
        line = f"incomplete ({outcome.reason})"
        if outcome.error:
            line += f": {outcome.error}"
        parts = [
            text_part(line),
            data_part({"reason": outcome.reason, "next": outcome.next, "error": outcome.error}),
        ]
    if parts is not None:
        status.message.CopyFrom(
            agent_message(
                parts,
                message_id=f"{task_id}:status:{turn.revision}",
                task_id=task_id,
                context_id=context_id,
            )
        )
    return status


def _artifacts(turn: Turn, task_id: str) -> list[Artifact]:
    if turn.status not in ("completed", "incomplete"):
        return []
    text = answer_text(turn.messages)
    if not text and turn.status == "completed":
        text = _last_result_text(turn.messages)
    if not text:
        return []
    name = "answer" if turn.status == "completed" else "partial"
    return [Artifact(artifact_id=f"{task_id}:{name}", name=name, parts=[text_part(text)])]


def _last_result_text(messages: Sequence[Message]) -> str:
    """A turn a terminal tool ended has no text: its answer is that call's result."""
    for m in reversed(messages):
        result = m.tool_result
        if result is not None:
            return result.text
    return ""


def task_of_turn(turn: Turn, task_id: str) -> Task:
    """The A2A task a turn record stands for."""
    context_id = context_of(task_id)
    task = Task(id=task_id, context_id=context_id)
    task.status.CopyFrom(_status(turn, task_id, context_id))
    task.artifacts.extend(_artifacts(turn, task_id))
    task.history.extend(history_messages(turn.messages, task_id=task_id, context_id=context_id))
    return task
