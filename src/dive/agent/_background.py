"""Background results: calls still running when their turn ended, delivered later.

A hard-cancelled parallel call gets a :class:`BackgroundTaskHandle`; its ``done`` future
resolves with whatever the task finally produced (a result, an error or a cancellation). Feed
the results to ``run(background_results=...)``: that starts a turn whose ``background-tasks``
reminder names each tool call id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from dive.agent._outputs import error_result
from dive.messages import ToolCall, ToolResult

__all__ = ["BackgroundResult", "BackgroundTaskHandle", "await_background_tasks"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BackgroundResult:
    """The late result of a tool call whose turn had ended."""

    tool_call_id: str
    name: str
    turn_id: str
    result: ToolResult
    task_id: str = ""


class BackgroundTaskHandle:
    """A call still running when its turn ended; ``await handle.done`` for its result."""

    __slots__ = ("description", "done", "task_id", "tool_call_id", "turn_id")

    def __init__(
        self, task: asyncio.Future[Any], call: ToolCall, turn_id: str, description: str
    ) -> None:
        self.task_id = f"task_{call.id}"
        self.tool_call_id = call.id
        self.turn_id = turn_id
        self.description = description
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
                    result=_final(call, t),
                )
            )

        task.add_done_callback(forward)

    def __repr__(self) -> str:
        return f"BackgroundTaskHandle({self.description!r})"


def _final(call: ToolCall, task: asyncio.Future[Any]) -> ToolResult:
    if task.cancelled():
        return error_result(call, f'Tool "{call.name}" was cancelled when its turn ended.')
    exc = task.exception()
    if exc is not None:
        return error_result(call, f"Tool execution error: {exc}")
    value = task.result()
    if isinstance(value, tuple):  # a parallel batch task: (prepared call, ExecResult | None)
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
    """Wait for the handles (up to ``wait_at_most`` seconds); return the finished results."""
    futures = [h.done for h in handles]
    if not futures:
        return []
    done, _ = await asyncio.wait(futures, timeout=wait_at_most)
    return [f.result() for f in futures if f in done]
