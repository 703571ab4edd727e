"""Background subagents: tracked by task id, stopped with ``TaskStop``.

A background run's task id is the one the model was told (``task_<tool call id>``). While it
runs, :class:`BackgroundSubagents` holds its cancel token; ``TaskStop(task_id)`` cancels it,
and the run ends with its partial answer and the reason, delivered like any background
result.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field

from dive.tools import ToolAnnotations, ToolContext, ToolOutput, ToolReturn, TypedTool
from dive.turns import CancelToken

__all__ = ["BackgroundSubagents", "TaskStop"]


@dataclass(frozen=True, slots=True)
class _Running:
    token: CancelToken
    subagent_type: str
    description: str


class BackgroundSubagents:
    """The background subagent runs of one ``Subagents`` extension, by task id."""

    __slots__ = ("_running",)

    def __init__(self) -> None:
        self._running: dict[str, _Running] = {}

    def add(self, task_id: str, token: CancelToken, subagent_type: str, description: str) -> None:
        """Track a run that started.

        Args:
            task_id: the background task's id.
            token: cancels the run.
            subagent_type: the definition it runs.
            description: the short description the model gave.
        """
        self._running[task_id] = _Running(token, subagent_type, description)

    def done(self, task_id: str) -> None:
        """Forget a run that ended.

        Args:
            task_id: the background task's id.
        """
        self._running.pop(task_id, None)

    def running(self) -> dict[str, str]:
        """Task id → description of the runs still going."""
        return {k: f"{v.subagent_type}: {v.description}" for k, v in self._running.items()}

    def stop(self, task_id: str, reason: str) -> bool:
        """Cancel a run; False when no such run is going.

        Args:
            task_id: the background task's id.
            reason: why, recorded as the run's cancel reason.
        """
        found = self._running.get(task_id)
        if found is None:
            return False
        found.token.cancel(reason)
        return True


class _StopInput(BaseModel):
    task_id: str = Field(description="The task id a background Agent call was started as.")


class TaskStop(TypedTool[_StopInput]):
    """``TaskStop(task_id)``: stop a background subagent; its partial answer still arrives.

    Args:
        tasks: the background runs it can stop.
    """

    input_model = _StopInput
    tool_name = "TaskStop"
    tool_description = (
        "Stop a background subagent started with the Agent tool (run_in_background=true), by "
        "the task id its start result gave. Its partial answer is delivered later like any "
        "background result."
    )
    tool_annotations = ToolAnnotations(title="Stop a background task", idempotent=True)
    subagent_machinery = True

    def __init__(self, tasks: BackgroundSubagents) -> None:
        super().__init__()
        self.tasks = tasks

    async def run(self, input: _StopInput, ctx: ToolContext) -> ToolOutput:
        if self.tasks.stop(input.task_id, "stopped with TaskStop"):
            return f"Stopping task {input.task_id}; its partial answer will be delivered."
        going = self.tasks.running()
        listed = ", ".join(sorted(going)) or "none"
        return ToolReturn(
            content=f"No background subagent is running as {input.task_id!r} (running: {listed}).",
            is_error=True,
        )
