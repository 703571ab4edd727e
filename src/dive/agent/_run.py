"""``Run``: one invocation past its boundary — frozen setup, turn state, events, tools.

The driver's steps take a ``Run`` and return an ``Ending`` or nothing. The turn's state is
changed only through ``run.state``'s methods (``dive.turns.TurnState``) and call states only
through its ledger; this object owns just the per-invocation pieces that are not turn state:
the resolved tools and the handles of calls handed to the background.
"""

from __future__ import annotations

from typing import Any, Final

from dive.agent._background import BackgroundTaskHandle
from dive.agent._context import RunContext
from dive.agent._hooks import HOOK_POLICIES, HookContext
from dive.agent._runner import Runner, StepRef
from dive.agent._setup import AgentConfig, ToolIndex, TurnSetup
from dive.agent._sink import EventSink
from dive.errors import SoftCanceled
from dive.messages import Message
from dive.turns import TurnOutcome, TurnState, TurnStatus, TurnView

__all__ = ["Run"]


class Run:
    """State of one invocation of the loop; see the module docstring."""

    __slots__ = ("_background", "_tools", "config", "events", "runner", "setup", "state")

    def __init__(self, setup: TurnSetup, state: TurnState, events: EventSink) -> None:
        self.setup: Final = setup
        self.config: Final[AgentConfig] = setup.config
        self.state: Final = state
        self.events: Final = events
        self.runner: Final[Runner] = setup.runner
        self._tools = setup.config.static
        self._background: list[BackgroundTaskHandle] = []

    @property
    def tools(self) -> ToolIndex:
        """The tools of the current model call."""
        return self._tools

    def use_tools(self, tools: ToolIndex) -> None:
        """Tools resolved for the next model call."""
        self._tools = tools

    @property
    def background_tasks(self) -> tuple[BackgroundTaskHandle, ...]:
        """Calls still running when their batch was stopped."""
        return tuple(self._background)

    def hand_to_background(self, handle: BackgroundTaskHandle) -> None:
        """Keep the handle of a call that outlives its batch."""
        self._background.append(handle)

    def ref(self) -> StepRef:
        """Where the next effect happens, by reference (session, turn, revision, step)."""
        state = self.state
        return StepRef(
            session_id=self.setup.session_id,
            turn_id=state.turn_id,
            revision=state.revision,
            step=state.iterations,
        )

    def run_context(self) -> RunContext[Any]:
        """The context instructions functions and output validators see."""
        state = self.state
        setup = self.setup
        return RunContext(
            deps=setup.deps,
            values=setup.values,
            turn_id=state.turn_id,
            session_id=setup.session_id,
            agent_name=self.config.name,
            iteration=state.iterations,
            messages=tuple(state.working),
            output_retries_used=state.output_failures,
        )

    def check_soft_cancel(self) -> None:
        """Stop at this step boundary if a stop was requested."""
        c = self.setup.cancel
        if c is not None and c.soft_cancel_requested:
            raise SoftCanceled(c.reason or "soft-canceled by the user")

    @property
    def stop_requested(self) -> bool:
        """True once any stop (soft or hard) was requested."""
        c = self.setup.cancel
        return c is not None and c.soft_cancel_requested

    def hook_context(
        self,
        point: str,
        *,
        status: TurnStatus = "running",
        messages: list[Message] | None = None,
        outcome: TurnOutcome | None = None,
    ) -> HookContext:
        """A fresh context for hook ``point``, with a read-only view of the turn."""
        state = self.state
        view = TurnView(
            id=state.turn_id,
            origin=state.origin,
            status=status,
            messages=tuple(messages if messages is not None else state.record),
            tool_calls=state.calls.records(),
            usage=state.turn_usage,
            model_calls=state.model_calls,
            outcome=outcome,
            outcome_writable="outcome" in HOOK_POLICIES[point].may_change,
        )
        setup = self.setup
        ctx = HookContext(
            agent=setup.agent,
            values=setup.values,
            deps=setup.deps,
            hook_point=point,
            session=setup.session,
            turn=view,
        )
        ctx.system_prompt = state.system_prompt
        return ctx
