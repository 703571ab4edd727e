"""``DiveRequestHandler``: the A2A request handler that runs a dive agent on a session store.

There is no task store of the SDK's: a task is a turn (see ``_tasks``), so every replica
reading the same store sees the same tasks, and a restart loses none.

- ``SendMessage`` / ``message/send`` (always answered with a Task): without ``taskId``, a new
  task — a new turn in the session named by ``contextId`` (a fresh one when absent); with
  the ``taskId`` of an input-required or auth-required task, the message answers it (see
  ``_answers``). ``returnImmediately`` answers with the working task at once.
- ``SendStreamingMessage`` / ``message/stream``: the same, as events (see ``_live``).
- ``GetTask``, ``ListTasks``: from the running turn in this process, else from the store.
- ``CancelTask``: a running turn is cancelled through its ``CancelToken`` and the request
  waits for its write; a suspended one is closed under the session lock (its identity is
  checked again under the lock), written with the revision it was loaded at.
- ``SubscribeToTask``: the events of a turn running in this process (replayed from its
  start); an interrupted task sends itself once.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Callable
from dataclasses import replace
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import RequestHandler
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    InternalError,
    InvalidParamsError,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    PushNotificationNotSupportedError,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskNotCancelableError,
    TaskNotFoundError,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    UnsupportedOperationError,
)
from a2a.types import Message as A2AMessage
from a2a.utils.errors import A2AError
from a2a.utils.task import apply_history_length

from dive.a2a._answers import resume_results
from dive.a2a._live import LiveTask, RunStarter
from dive.a2a._parts import message_blocks
from dive.a2a._tasks import (
    TASK_KEY,
    context_of,
    find_turn,
    new_task_id,
    task_of_turn,
    task_state,
)
from dive.agent import Agent, AgentEvent
from dive.errors import StoreError, UserError
from dive.messages import Message
from dive.sessions import Session, SessionStore, session_lock, validate_session_id
from dive.turns import CancelToken, Turn

__all__ = ["DiveRequestHandler"]

_TERMINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
_PAGE = 50


def _a2a_error(exc: BaseException) -> A2AError:
    """An error raised before the turn boundary, as the client should see it."""
    if isinstance(exc, A2AError):
        return exc
    if isinstance(exc, UserError):
        return InvalidParamsError(message=str(exc))
    if isinstance(exc, StoreError):
        return InternalError(message=f"the session store failed: {exc}")
    return InternalError(message=f"{type(exc).__name__}: {exc}")


def _names(turn: Turn, task_id: str) -> bool:
    return any(m.metadata.get(TASK_KEY) == task_id for m in turn.messages)


class DiveRequestHandler(RequestHandler):
    """Serves one ``Agent`` over A2A, its tasks kept as turns in ``store``.

    Args:
        agent: the agent that answers.
        store: where each context's session (its tasks, as turns) is kept.
    """

    def __init__(self, agent: Agent[Any, Any], store: SessionStore) -> None:
        self._agent = agent
        self._store = store
        self._live: dict[str, LiveTask] = {}

    # --- messages ------------------------------------------------------------------------

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task:
        """Start (or answer) a task from a message; wait for it unless asked not to.

        Args:
            params: the A2A request.
            context: the server's call context.
        """
        live = await self._begin(params.message)
        if not params.configuration.return_immediately:
            await live.wait()
        return apply_history_length(live.snapshot, params.configuration)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """Start (or answer) a task from a message and stream its events.

        Args:
            params: the A2A request.
            context: the server's call context.
        """
        live = await self._begin(params.message)
        async for event in live.events():
            if isinstance(event, Task):
                yield apply_history_length(event, params.configuration)
            else:
                yield event

    async def _begin(self, message: A2AMessage) -> LiveTask:
        """Start the message's run; raise an A2A error if it failed before its boundary."""
        if message.task_id:
            task_id, context_id, initial, starter = await self._answer(message)
        else:
            task_id, context_id, initial, starter = self._new(message)
        live = LiveTask(task_id, context_id, initial)
        self._live[task_id] = live
        live.start(starter, self._ended)
        await live.started.wait()
        if not live.began:
            self._live.pop(task_id, None)
            raise _a2a_error(live.error or RuntimeError("the run ended without a turn"))
        return live

    def _ended(self, live: LiveTask) -> None:
        if self._live.get(live.task_id) is live:
            del self._live[live.task_id]

    def _session(self, context_id: str) -> Session:
        return self._store.session(context_id)

    def _new(self, message: A2AMessage) -> tuple[str, str, Task, RunStarter]:
        context_id = message.context_id or uuid.uuid4().hex
        try:
            validate_session_id(context_id)
        except UserError as exc:
            raise InvalidParamsError(message=f"contextId: {exc}") from exc
        task_id = new_task_id(context_id)
        blocks = message_blocks(message)
        if not blocks:
            raise InvalidParamsError(message="the message has no text, data or file parts")
        user = Message(
            role="user",
            content=tuple(blocks),
            id=message.message_id or None,
            metadata={TASK_KEY: task_id},
        )
        session = self._session(context_id)
        agent = self._agent

        async def starter(on_event: Callable[[AgentEvent], Any], cancel: CancelToken) -> Any:
            return await agent.run(user, session=session, on_event=on_event, cancel=cancel)

        initial = Task(id=task_id, context_id=context_id)
        initial.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))
        echo = A2AMessage()
        echo.CopyFrom(message)
        echo.task_id, echo.context_id = task_id, context_id
        initial.history.append(echo)
        return task_id, context_id, initial, starter

    async def _answer(self, message: A2AMessage) -> tuple[str, str, Task, RunStarter]:
        task_id = message.task_id
        context_id = context_of(task_id)
        if message.context_id and message.context_id != context_id:
            raise InvalidParamsError(
                message=f"contextId {message.context_id!r} is not the context of task "
                f"{task_id!r} ({context_id!r})"
            )
        if task_id in self._live:
            raise UnsupportedOperationError(
                message=f"task {task_id} is still working; wait for it (GetTask) or cancel it"
            )
        session = self._session(context_id)
        snap = await session.load()
        turn = snap.open_turn
        if turn is None or not _names(turn, task_id) or turn.status != "suspended":
            found = turn if turn is not None and _names(turn, task_id) else None
            found = found or await find_turn(self._store, task_id)
            if found is None:
                raise TaskNotFoundError(f"task {task_id} was not found")
            state = TaskState.Name(task_state(found)).removeprefix("TASK_STATE_").lower()
            raise UnsupportedOperationError(
                message=f"task {task_id} is {state} and takes no more messages; send a new "
                f"message with contextId {context_id!r} and no taskId to go on"
            )
        assert turn.suspension is not None
        results = resume_results(turn.suspension, message)
        agent = self._agent

        async def starter(on_event: Callable[[AgentEvent], Any], cancel: CancelToken) -> Any:
            return await agent.run(
                tool_results=results,
                session=session,
                turn_id=turn.id,
                on_event=on_event,
                cancel=cancel,
            )

        initial = task_of_turn(turn, task_id)
        echo = A2AMessage()
        echo.CopyFrom(message)
        echo.context_id = context_id
        initial.history.append(echo)
        return task_id, context_id, initial, starter

    # --- tasks ---------------------------------------------------------------------------

    async def _task(self, task_id: str) -> Task:
        live = self._live.get(task_id)
        if live is not None:
            return live.snapshot
        turn = await find_turn(self._store, task_id)
        if turn is None:
            raise TaskNotFoundError(f"task {task_id} was not found")
        return task_of_turn(turn, task_id)

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        """The task as stored (its turn in the session).

        Args:
            params: the A2A request.
            context: the server's call context.
        """
        return apply_history_length(await self._task(params.id), params)

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """The tasks of a context (a session), or of recent sessions, newest first, paged.

        Args:
            params: the A2A request.
            context: the server's call context.
        """
        if params.context_id:
            contexts = [params.context_id]
        else:
            contexts = [info.id for info in await self._store.list(limit=100)]
        tasks: list[Task] = []
        for context_id in contexts:
            tasks.extend(await self._tasks_of(context_id))
        if params.status != TaskState.TASK_STATE_UNSPECIFIED:
            tasks = [t for t in tasks if t.status.state == params.status]
        size = params.page_size or _PAGE
        start = int(params.page_token) if params.page_token.isdigit() else 0
        page = tasks[start : start + size]
        out = ListTasksResponse(page_size=size, total_size=len(tasks))
        for task in page:
            if not params.include_artifacts:
                task.ClearField("artifacts")
            out.tasks.append(apply_history_length(task, params))
        if start + size < len(tasks):
            out.next_page_token = str(start + size)
        return out

    async def _tasks_of(self, context_id: str) -> list[Task]:
        """The tasks of one context, newest first."""
        live = [t for t in self._live.values() if t.context_id == context_id]
        out: list[Task] = [t.snapshot for t in live]
        seen: set[str] = {t.task_id for t in live}
        for turn in reversed(await self._store.turns(context_id)):
            for m in turn.messages:
                task_id = m.metadata.get(TASK_KEY)
                if task_id and task_id not in seen:
                    seen.add(task_id)
                    out.append(task_of_turn(turn, task_id))
                    break
        return out

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        """Cancel a running task, or close a suspended one.

        Args:
            params: the A2A request.
            context: the server's call context.
        """
        task_id = params.id
        live = self._live.get(task_id)
        if live is not None:
            live.cancel.cancel("canceled over A2A")
            await live.wait()
            return live.snapshot
        turn = await find_turn(self._store, task_id)
        if turn is None:
            raise TaskNotFoundError(f"task {task_id} was not found")
        if turn.status == "suspended":
            return await self._cancel_suspended(task_id, turn)
        if turn.status == "running":
            raise TaskNotCancelableError(
                f"task {task_id} is running in another process; cancel it there"
            )
        raise TaskNotCancelableError(f"task {task_id} has already ended ({turn.status})")

    async def _cancel_suspended(self, task_id: str, turn: Turn) -> Task:
        context_id = context_of(task_id)
        session = self._session(context_id)
        async with session_lock(context_id):
            snap = await session.load()
            open_turn = snap.open_turn
            if (
                open_turn is None
                or open_turn.id != turn.id
                or open_turn.status != "suspended"
                or open_turn.suspension is None
            ):
                raise TaskNotCancelableError(
                    f"task {task_id} changed while it was being canceled; read it again"
                )
            closed = await self._agent.cancel_suspended_turn(
                session=None, history=list(snap.history), suspension=open_turn.suspension
            )
            record = replace(closed.turn, created_at=open_turn.created_at)
            try:
                await session.checkpoint(record, expected_revision=snap.revision)
            except StoreError as exc:
                raise TaskNotCancelableError(
                    f"task {task_id} could not be canceled: {exc}"
                ) from exc
        return await self._task(task_id)

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """Stream the events of a running task.

        Args:
            params: the A2A request.
            context: the server's call context.
        """
        live = self._live.get(params.id)
        if live is not None:
            async for event in live.events():
                yield event
            return
        task = await self._task(params.id)
        if task.status.state in _TERMINAL:
            state = TaskState.Name(task.status.state)
            raise UnsupportedOperationError(message=f"task {params.id} has ended ({state})")
        yield task

    # --- what dive does not offer ---------------------------------------------------------

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Refused: push notifications are not supported.

        Args:
            params: the A2A request.
            context: the server's call context.
        """
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Refused: push notifications are not supported.

        Args:
            params: the A2A request.
            context: the server's call context.
        """
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        """Refused: push notifications are not supported.

        Args:
            params: the A2A request.
            context: the server's call context.
        """
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        """Refused: push notifications are not supported.

        Args:
            params: the A2A request.
            context: the server's call context.
        """
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        """Refused: this agent has no extended card.

        Args:
            params: the A2A request.
            context: the server's call context.
        """
        raise UnsupportedOperationError(message="this agent has no extended card")

    async def aclose(self) -> None:
        """Cancel the runs still going (their turns are written as canceled) and wait."""
        for live in list(self._live.values()):
            live.cancel.cancel("the server is shutting down")
        for live in list(self._live.values()):
            await live.wait()
