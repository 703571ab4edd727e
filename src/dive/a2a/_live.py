"""A task while its turn runs in this process: the run's events as A2A events, fanned out.

The run starts in its own asyncio task (a client that disconnects does not stop it; the
turn is written to the store either way). Until the run passes its turn boundary nothing is
published: an error before it (a bad resume, a suspended session) is raised to the request
that started it. Then: the task (state working), each text delta as a working status update,
each tool call and result as a working status update with a data part, and at the end the
final task's artifacts as artifact updates and its status as the last status update.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from a2a.types import (
    Artifact,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

from dive.a2a._parts import agent_message, data_part, text_part
from dive.a2a._tasks import task_of_turn
from dive.agent import (
    AgentEvent,
    ModelStreamEvent,
    RunResult,
    ToolCallEvent,
    ToolCallResultEvent,
)
from dive.llm import ContentBlockDelta, TextDelta
from dive.turns import CancelToken

__all__ = ["A2AEvent", "LiveTask", "RunStarter"]

A2AEvent = Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
RunStarter = Callable[
    [Callable[[AgentEvent], Awaitable[None]], CancelToken], Awaitable[RunResult[Any]]
]


class LiveTask:
    """One running turn of a task."""

    def __init__(self, task_id: str, context_id: str, initial: Task) -> None:
        self.task_id = task_id
        self.context_id = context_id
        self.cancel = CancelToken()
        self.began = False
        """True once the run passed its turn boundary (its first event)."""
        self.started = asyncio.Event()
        """Set at the first event, or when the run ended without one."""
        self.done = asyncio.Event()
        self.result: RunResult[Any] | None = None
        self.error: BaseException | None = None
        self.final: Task | None = None
        self._snapshot = initial
        self._log: list[A2AEvent] = []
        self._queues: list[asyncio.Queue[A2AEvent | None]] = []
        self._deltas = 0
        self._runner: asyncio.Task[None] | None = None

    @property
    def snapshot(self) -> Task:
        """The task as it stands (working while the run goes on)."""
        out = Task()
        out.CopyFrom(self.final or self._snapshot)
        return out

    def start(self, starter: RunStarter, on_done: Callable[[LiveTask], None]) -> None:
        """Start the run in its own task; ``on_done`` is called when it has ended."""

        async def go() -> None:
            try:
                self.result = await starter(self._on_event, self.cancel)
                self.final = task_of_turn(self.result.turn, self.task_id)
                self._finish(self.final)
            except BaseException as exc:  # reported to whoever waits on the task
                self.error = exc
                if self.began:
                    self._fail(exc)
                if not isinstance(exc, Exception):
                    raise
            finally:
                self.started.set()
                self.done.set()
                self._close()
                on_done(self)

        self._runner = asyncio.create_task(go(), name=f"a2a task {self.task_id}")

    async def wait(self) -> None:
        """Wait for the run to end."""
        await self.done.wait()

    # --- events ---------------------------------------------------------------------------

    async def _on_event(self, event: AgentEvent) -> None:
        if not self.began:
            self.began = True
            self.started.set()
            working = self.snapshot
            working.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_WORKING))
            self._snapshot = working
            self._publish(working)
        match event:
            case ModelStreamEvent(event=ContentBlockDelta(delta=TextDelta(text=text))) if text:
                self._working([text_part(text)], f"delta:{self._deltas}")
                self._deltas += 1
            case ToolCallEvent(call=call):
                data = {"id": call.id, "name": call.name, "arguments": dict(call.arguments)}
                self._working([data_part({"tool_call": data})], f"call:{call.id}")
            case ToolCallResultEvent(call=call, result=result, state=state):
                data: dict[str, Any] = {"id": call.id, "name": call.name, "state": state}
                if result is not None:
                    data["is_error"] = result.is_error
                    data["text"] = result.text
                self._working([data_part({"tool_result": data})], f"result:{call.id}")
            case _:
                pass

    def _working(self, parts: list[Any], suffix: str) -> None:
        message = agent_message(
            parts,
            message_id=f"{self.task_id}:{suffix}",
            task_id=self.task_id,
            context_id=self.context_id,
        )
        status = TaskStatus(state=TaskState.TASK_STATE_WORKING, message=message)
        self._publish(
            TaskStatusUpdateEvent(task_id=self.task_id, context_id=self.context_id, status=status)
        )

    def _finish(self, task: Task) -> None:
        for artifact in task.artifacts:
            self._publish(self._artifact_event(artifact))
        self._publish(
            TaskStatusUpdateEvent(
                task_id=self.task_id, context_id=self.context_id, status=task.status
            )
        )

    def _artifact_event(self, artifact: Artifact) -> TaskArtifactUpdateEvent:
        return TaskArtifactUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            artifact=artifact,
            append=False,
            last_chunk=True,
        )

    def _fail(self, exc: BaseException) -> None:
        """The run raised after its boundary (a bug or a broken store): the task failed."""
        message = agent_message(
            [text_part(f"the run failed: {type(exc).__name__}: {exc}")],
            message_id=f"{self.task_id}:error",
            task_id=self.task_id,
            context_id=self.context_id,
        )
        failed = self.snapshot
        failed.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_FAILED, message=message))
        self.final = failed
        self._publish(
            TaskStatusUpdateEvent(
                task_id=self.task_id, context_id=self.context_id, status=failed.status
            )
        )

    def _publish(self, event: A2AEvent) -> None:
        self._log.append(event)
        for q in self._queues:
            q.put_nowait(event)

    def _close(self) -> None:
        for q in self._queues:
            q.put_nowait(None)

    async def events(self) -> AsyncIterator[A2AEvent]:
        """Every event of this run, from its first (replayed) to its last."""
        queue: asyncio.Queue[A2AEvent | None] = asyncio.Queue()
        for event in self._log:
            queue.put_nowait(event)
        if self.done.is_set():
            queue.put_nowait(None)
        else:
            self._queues.append(queue)
        try:
            while (event := await queue.get()) is not None:
                yield event
        finally:
            with contextlib.suppress(ValueError):
                self._queues.remove(queue)
