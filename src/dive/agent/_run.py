"""``Run``: one invocation past its boundary — frozen setup, turn state, events, tools.

The driver's steps take a ``Run`` and return an ``Ending`` or nothing. The turn's state is
changed only through ``run.state``'s methods (``dive.turns.TurnState``) and call states only
through its ledger; this object owns just the per-invocation pieces that are not turn state:
the resolved tools, the handles of calls handed to the background, and how many times in a
row each tool asked the model to retry (``ModelRetry``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from dive.agent._background import BackgroundTaskHandle
from dive.agent._context import RunContext
from dive.agent._hooks import (
    HOOK_POLICIES,
    HookContext,
    HookOutput,
    HookPoint,
    HookPolicy,
    run_hooks,
)
from dive.agent._output import OutputAttempts
from dive.agent._runner import Runner, StepRef
from dive.agent._setup import AgentConfig, ToolIndex, TurnSetup
from dive.agent._sink import EventSink
from dive.errors import SoftCanceled
from dive.messages import Message
from dive.turns import TurnOutcome, TurnStatus, TurnView
from dive.turns._engine import TurnState

__all__ = ["Run"]


class Run:
    """State of one invocation of the loop; see the module docstring."""

    __slots__ = (
        "_background",
        "_ref",
        "budgeted",
        "cancel",
        "config",
        "events",
        "model_retries",
        "output",
        "runner",
        "session_id",
        "setup",
        "state",
        "tools",
    )

    def __init__(self, setup: TurnSetup, state: TurnState, events: EventSink) -> None:
        self.setup: Final = setup
        self.config: Final[AgentConfig] = setup.config
        self.state: Final = state
        self.events: Final = events
        self.runner: Final[Runner] = setup.runner
        self.cancel: Final = setup.cancel
        """The cancel token, if any (``check_soft_cancel`` only matters when there is one)."""
        self.session_id: Final = setup.session_id
        config = setup.config
        self.budgeted: Final = (
            config.usage_limits is not None or config.session_usage_limits is not None
        )
        """A turn or session usage budget applies (otherwise no budget check runs)."""
        self.tools: ToolIndex = setup.config.static
        """The tools of the current model call (``use_tools`` changes them)."""
        self._background: list[BackgroundTaskHandle] = []
        self.output: Final = OutputAttempts()
        """The structured output: accepted value and failed attempts."""
        self._ref: StepRef | None = None
        self.model_retries: dict[str, int] = {}  # tool name -> ModelRetry raised in a row

    def use_tools(self, tools: ToolIndex) -> None:
        """Tools resolved for the next model call."""
        self.tools = tools

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
        ref = self._ref
        revision, step = state.position
        if ref is None or ref.revision != revision or ref.step != step:
            ref = self._ref = StepRef(
                session_id=self.session_id, turn_id=state.turn_id, revision=revision, step=step
            )
        return ref

    def run_context(self) -> RunContext[Any]:
        """The context instructions functions and output validators see."""
        state = self.state
        setup = self.setup
        return RunContext(
            deps=setup.deps,
            values=setup.values,
            turn_id=state.turn_id,
            session_id=self.session_id,
            agent_name=self.config.name,
            iteration=state.iterations,
            messages=tuple(state.transcript.working),
            output_retries_used=self.output.failures,
        )

    def check_soft_cancel(self) -> None:
        """Stop at this step boundary if a stop was requested.

        Callers skip it when ``cancel`` is None (nothing can request a stop).
        """
        c = self.cancel
        if c is not None and c.soft_cancel_requested:
            raise SoftCanceled(c.reason or "soft-canceled by the user")

    @property
    def stop_requested(self) -> bool:
        """True once any stop (soft or hard) was requested."""
        c = self.cancel
        return c is not None and c.soft_cancel_requested

    async def hook(
        self,
        point: HookPoint,
        *,
        status: TurnStatus = "running",
        record: Sequence[Message] | None = None,
        outcome: TurnOutcome | None = None,
        **inputs: Any,
    ) -> HookOutput:
        """Run ``point``'s hooks; return only what the point may change (its table row).

        ``inputs`` are the context fields the hooks see (``messages``, ``tool``, ``call``…);
        ``status``, ``record`` (default: the record so far) and ``outcome`` shape the turn's
        view. A session write a ``pre_generation`` hook reports is taken even if the hooks
        raise; exceptions propagate as the point's row says (``run_hooks``).
        """
        policy = HOOK_POLICIES[point]
        ctx = self._context(point, policy, status, record, outcome)
        for name, value in inputs.items():
            if name not in _INPUTS:
                raise TypeError(f"HookContext has no input field {name!r}")
            setattr(ctx, name, value)
        config = self.config
        try:
            out = await run_hooks(point, getattr(config.hooks, point), ctx, config.log)
        finally:
            written = ctx.take_session_write()  # a hook's own write (a compaction) landed
            if written is not None:
                self.state.saved(written)
        return HookOutput(
            changed={name: getattr(ctx, name) for name in policy.may_change},
            returned=tuple(out.returned),
            denial=out.denial,
            reminders=tuple(ctx.take_reminders()),
        )

    def _context(
        self,
        point: HookPoint,
        policy: HookPolicy,
        status: TurnStatus,
        record: Sequence[Message] | None,
        outcome: TurnOutcome | None,
    ) -> HookContext:
        """A fresh context for hook ``point``, with a read-only view of the turn."""
        state = self.state
        view = None
        if policy.sees_turn:
            view = TurnView(
                id=state.turn_id,
                origin=state.origin,
                status=status,
                messages=tuple(record if record is not None else state.transcript.record),
                tool_calls=state.calls.records(),
                usage=state.turn_usage,
                model_calls=state.model_calls,
                outcome=outcome,
                outcome_writable="outcome" in policy.may_change,
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
        ctx.system_prompt = state.transcript.system_prompt
        return ctx


# The context fields the loop hands to hooks (``Run.hook``'s inputs).
_INPUTS = frozenset(
    {
        "messages",
        "model_settings",
        "iteration",
        "tool",
        "call",
        "tool_result",
        "output_messages",
        "result",
        "usage",
        "stop_hook_active",
        "session_start_source",
    }
)
