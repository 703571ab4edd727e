"""Background results: work that finishes after its turn ended, delivered to a later turn.

Two things get a :class:`BackgroundTaskHandle`: a tool that returned ``Background(description,
fn)`` (the model at once gets a "started" result naming the task id, and ``fn`` runs in a task
of its own that outlives the batch and the turn), and a hard-cancelled parallel call still
running when its turn ended. The handles are in ``result.background_tasks``; a handle's
``done`` future resolves with whatever the task finally produced (a result, an error, a
stop or a cancellation) and ``stop(reason)`` ends it early. Feed the results of
:func:`await_background_tasks` to ``run(background_results=...)``: that starts a turn whose
``background-tasks`` reminder names each tool call id. The tasks live in this process only:
a process that exits loses the ones still running.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from dive.agent._outputs import error_result, to_tool_result
from dive.llm import Usage
from dive.messages import ToolCall, ToolResult
from dive.tools import Background, Suspend

__all__ = [
    "BackgroundResult",
    "BackgroundTaskHandle",
    "await_background_tasks",
    "start_background",
    "started_text",
]

_RUNNING: set[asyncio.Future[Any]] = set()  # strong references: a task is never collected


@dataclass(frozen=True, slots=True, kw_only=True)
class BackgroundResult:
    """The late result of a tool call whose turn had ended.

    ``usage`` is what the work reported with ``ctx.report_usage`` after it moved to the
    background (a background subagent's model calls); the turn that receives the result
    adds it to its own usage.

    Attributes:
        tool_call_id: the call that started the work.
        name: the tool's name.
        turn_id: the turn the call belonged to.
        result: the late result.
        task_id: the id the model was told (``task_<tool call id>``).
        usage: usage the work reported after it moved to the background.
    """

    tool_call_id: str
    name: str
    turn_id: str
    result: ToolResult
    task_id: str = ""
    usage: Usage = Usage.ZERO


class BackgroundTaskHandle:
    """Work still running after its turn ended; ``await handle.done`` for its result.

    Attributes:
        task_id: ``task_<tool call id>``, the id the model was told.
        tool_call_id: the call that started it.
        turn_id: the turn that call belongs to.
        description: what it is doing.
        done: resolves with the :class:`BackgroundResult`.

    Args:
        task: the running work.
        call: the call that started it.
        turn_id: the turn that call belongs to.
        description: what the work is doing.
    """

    __slots__ = (
        "_stopped",
        "_task",
        "_usage",
        "description",
        "done",
        "task_id",
        "tool_call_id",
        "turn_id",
    )

    def __init__(
        self, task: asyncio.Future[Any], call: ToolCall, turn_id: str, description: str
    ) -> None:
        self.task_id = f"task_{call.id}"
        self.tool_call_id = call.id
        self.turn_id = turn_id
        self.description = description
        self._task = task
        self._stopped: str | None = None
        self._usage = Usage.ZERO
        loop = asyncio.get_running_loop()
        self.done: asyncio.Future[BackgroundResult] = loop.create_future()

        def forward(t: asyncio.Future[Any]) -> None:
            if self.done.done():
                return
            self.done.set_result(
                BackgroundResult(
                    tool_call_id=call.id,
                    name=call.name,
                    turn_id=turn_id,
                    task_id=self.task_id,
                    result=_final(call, t, self._stopped),
                    usage=self._usage,
                )
            )

        task.add_done_callback(forward)

    def add_usage(self, usage: Usage) -> None:
        """Usage the work reported while it ran in the background.

        Args:
            usage: the usage to add to the late result.
        """
        self._usage = self._usage + usage

    def stop(self, reason: str = "stopped") -> bool:
        """Cancel the task; its result says it was stopped and why. False if it had ended.

        Args:
            reason: why, stated in the result.
        """
        if self._task.done():
            return False
        self._stopped = reason
        self._task.cancel()
        return True

    def __repr__(self) -> str:
        return f"BackgroundTaskHandle({self.task_id!r}, {self.description!r})"


def start_background(work: Background, call: ToolCall, turn_id: str) -> BackgroundTaskHandle:
    """Run ``work.fn`` in a task of its own; the handle of a ``Background`` output."""

    async def run() -> ToolResult:
        value = await work.fn()
        if isinstance(value, Suspend):
            return error_result(call, f'Tool "{call.name}" asked for input after its turn ended.')
        if isinstance(value, Background):
            return error_result(call, f'Tool "{call.name}" returned Background from Background.')
        return to_tool_result(call, value)

    task = asyncio.ensure_future(run())
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    return BackgroundTaskHandle(task, call, turn_id, work.description)


def started_text(handle: BackgroundTaskHandle) -> str:
    """What the model is told when a tool's work moved to the background."""
    return (
        f"Started in the background as task {handle.task_id}: {handle.description}. "
        "Its result will be delivered in a later turn; do not wait or poll for it."
    )


def _final(call: ToolCall, task: asyncio.Future[Any], stopped: str | None) -> ToolResult:
    if task.cancelled():
        if stopped is not None:
            return error_result(call, f'Tool "{call.name}" was stopped: {stopped}')
        return error_result(call, f'Tool "{call.name}" was cancelled when its turn ended.')
    exc = task.exception()
    if exc is not None:
        return error_result(call, f"Tool execution error: {exc}")
    value = task.result()
    if isinstance(value, tuple):  # a parallel batch task: (prepared call, ToolOutcome | None)
        value = cast("tuple[Any, Any]", value)[1]
        if value is None:
            return error_result(call, f'Tool "{call.name}" never started.')
    res = getattr(value, "result", value)
    if isinstance(res, ToolResult):
        return res
    pending = getattr(value, "pending", None)
    if pending is not None:
        return error_result(call, f'Tool "{call.name}" asked for input after its turn ended.')
    return error_result(call, f'Tool "{call.name}" finished without a result.')


async def await_background_tasks(
    handles: Sequence[BackgroundTaskHandle], *, wait_at_most: float | None = None
) -> list[BackgroundResult]:
    """Wait for the handles (up to ``wait_at_most`` seconds); return the finished results.

    Args:
        handles: the handles (``result.background_tasks``).
        wait_at_most: seconds to wait; None: until every one finishes.
    """
    futures = [h.done for h in handles]
    if not futures:
        return []
    done, _ = await asyncio.wait(futures, timeout=wait_at_most)
    return [f.result() for f in futures if f in done]
