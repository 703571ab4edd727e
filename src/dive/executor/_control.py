"""Per-round control of one execute: forced submission and the finalize nudge.

The loop asks the ``pre_iteration`` hook before every model call; the controller answers
with the call's ``tool_choice`` (forced to the submit tool or left to the model) and, once,
the finalize nudge. Every tool round starts from ``auto``: forcing applies to one call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dive.agent import HookContext
from dive.errors import HookAbort
from dive.executor._options import ExecutorOptions
from dive.llm import ModelSettings, ToolChoice
from dive.messages import Message, ToolCall

if TYPE_CHECKING:
    from dive.executor._rounds import RoundRecorder

__all__ = ["NUDGE_TEXT", "Control"]

NUDGE_TEXT = (
    "You have gathered enough evidence. Call the {name} tool now to return your result based "
    "on what you have found so far."
)


class Control:
    """The forcing state of one execute; changed by the executor, the tools and the hook."""

    def __init__(
        self,
        options: ExecutorOptions,
        submit: str | None,
        gate_known: bool,
        interventions: list[str] | None = None,
    ) -> None:
        self._options = options
        self._interventions = interventions if interventions is not None else []
        self._submit = submit
        self._thinking = options.thinking_budget is not None
        gate = options.force_submit_defer_until
        self._deferred = options.force_submit_tool_choice and gate is not None and gate_known
        self._gate_resolved = False
        self._force_next = options.force_submit_tool_choice and not self._deferred
        self._live_calls = 0
        self._nudged = False
        self.round = 0  # the trace index of the round being made
        self.recorder: RoundRecorder | None = None  # the execute's rounds (set by the driver)
        self.limit: int | None = None  # rounds of the budget
        self.exhausted = False

    def saw_call(self, name: str) -> None:
        """A model-made call, in model order (seeds are not counted)."""
        if name == self._options.force_submit_defer_until:
            self._gate_resolved = True
        if name != self._submit:
            self._live_calls += 1

    def _count(self, messages: Sequence[Message]) -> None:
        """Count the previous round's calls (the last assistant message), in model order."""
        last = next((m for m in reversed(messages) if m.role == "assistant"), None)
        if last is not None:
            for block in last.content:
                if isinstance(block, ToolCall):
                    self.saw_call(block.name)

    def force_next(self) -> None:
        """Force the submit tool on the next model call (a redirect)."""
        self._force_next = True

    def before_call(self, ctx: HookContext[None]) -> None:
        """The ``pre_iteration`` hook: round number, budget, tool choice, nudge.

        Pause resends are free: they neither use the budget nor count as a tool round.
        """
        recorder = self.recorder
        self.round = recorder.mark() if recorder is not None else ctx.iteration
        used = recorder.charged(0) if recorder is not None else ctx.iteration
        if self.limit is not None and used >= self.limit:
            self.exhausted = True
            raise HookAbort("the executor's round budget is used up")
        paused = recorder is not None and recorder.last_paused
        force = self._force_next and not paused
        self._force_next = self._force_next and paused
        # within a turn, a call follows a tool round (or a pause, whose resend is the same call)
        after_tools = ctx.iteration > 0 and not paused
        if after_tools:
            self._count(ctx.messages)
        if after_tools and self._deferred and self._gate_resolved:
            force = True
        n = self._options.max_tool_calls_before_finalize
        if after_tools and n > 0 and not self._nudged and self._live_calls >= n and self._submit:
            self._nudged = True
            self._interventions.append("finalize_nudge")
            ctx.messages = [*ctx.messages, Message.user(NUDGE_TEXT.format(name=self._submit))]
            force = True
        if force and self._submit is not None and not self._thinking:
            choice = ToolChoice(type="tool", name=self._submit)
        else:
            choice = ToolChoice(type="auto")
        settings = ctx.model_settings or ModelSettings()
        ctx.model_settings = settings.merge(ModelSettings(tool_choice=choice))
