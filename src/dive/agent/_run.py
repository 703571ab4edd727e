"""``TurnRun``: the mutable state of one invocation.

It holds the turn's output record (full fidelity, what is saved), the model-facing working
set (what hooks may rewrite), per-call records, counters, usage and the event sink. Every
message the turn adds goes through :meth:`TurnRun.add`, so record and working set never
drift apart.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from dive.agent._events import AgentEvent
from dive.agent._hooks import HookContext
from dive.agent._records import CallState, ToolCallRecord, TurnOrigin
from dive.agent._reminders import Reminder, reminder_message
from dive.errors import EventHandlerError, SoftCanceled
from dive.llm import Model, ModelResponse, ModelSettings, ResponseAccumulator, Usage
from dive.messages import Message, ToolCall, ToolDefinition

if TYPE_CHECKING:
    from dive.agent._agent import Agent
    from dive.agent._background import BackgroundTaskHandle
    from dive.agent._cancel import CancelToken
    from dive.agent._durable import ClaimKeeper
    from dive.agent._records import Turn
    from dive.agent._resume import ResumeInfo
    from dive.agent._toolbatch import Batch
    from dive.sessions import Session
    from dive.tools import Tool

__all__ = ["EventHandler", "TurnRun"]

EventHandler = Callable[[AgentEvent], Awaitable[None] | None]


class TurnRun:
    """State of one invocation of the loop."""

    def __init__(
        self,
        agent: Agent[Any],
        *,
        model: Model,
        system_prompt: str,
        settings: ModelSettings,
        turn_id: str,
        origin: TurnOrigin,
        history: Sequence[Message],
        on_event: EventHandler | None,
        cancel: CancelToken | None,
        values: dict[str, Any],
        session_id: str | None = None,
        prior_usage: Usage | None = None,
    ) -> None:
        self.agent = agent
        self.model = model
        self.system_prompt = system_prompt
        self.settings = settings
        self.turn_id = turn_id
        self.origin = origin
        self.history = list(history)
        self.record: list[Message] = []
        self.working: list[Message] = list(history)
        self.on_event = on_event
        self.cancel = cancel
        self.values = values
        self.session_id = session_id
        self._usage = Usage.ZERO
        self.prior_usage = prior_usage or Usage.ZERO
        self.usage_unknown = False
        self.calls: dict[str, _CallEntry] = {}
        self.model_calls = 0
        self.budget_base = 0
        self.prompt_cache_key: str | None = None
        self.session: Session | None = None
        self.loaded_revision = 0
        self.background_tasks: list[BackgroundTaskHandle] = []
        self.owed: list[ToolCall] = []
        self.checkpoints = 0
        self.durable = False
        self.accepted: dict[str, Any] = {}
        self.deferred_events: list[AgentEvent] = []
        self.suspended_batch: Batch | None = None
        self.new_suspension = False
        self.resume: ResumeInfo | None = None
        self.stored_turn: Turn | None = None
        self.claim_keeper: ClaimKeeper | None = None
        self.executed_tool_calls = 0
        self.items: list[AgentEvent] = []
        self.last_response: ModelResponse | None = None
        self.accumulator: ResponseAccumulator | None = None
        self.batch: Batch | None = None
        self.tools: dict[str, Tool] = {}
        self.declared_members: frozenset[str] = frozenset()
        self.queued_reminders: list[tuple[Reminder, bool]] = []
        self.model_only: list[Message] = []
        self.output: Any = None
        self.output_failures = 0
        self.created_at = datetime.now(UTC)
        self.started = time.monotonic()
        self._emit_lock: asyncio.Lock | None = None

    def adopt(self, turn: Turn) -> None:
        """Fold into a stored incomplete turn: same id, its calls and counters carry over."""
        for rec in turn.tool_calls:
            tool = self.tools.get(rec.name) or self.agent.static_tools.get(rec.name)
            entry = _CallEntry(
                rec.id, rec.name, rec.state, rec.error, tool.definition if tool else None
            )
            self.calls[rec.id] = entry
        self.model_calls = turn.model_calls
        self.budget_base = turn.model_calls
        self.executed_tool_calls = turn.executed_tool_calls
        self.created_at = turn.created_at or self.created_at

    # --- messages -------------------------------------------------------------------------

    def add(self, message: Message) -> None:
        """Append a message to the record and the working set."""
        self.record.append(message)
        self.working.append(message)

    def add_model_only(self, message: Message) -> None:
        """Append a message the model sees during this invocation but that is not saved."""
        self.model_only.append(message)
        self.working.append(message)

    def flush_reminders(self) -> None:
        """Deliver queued reminders at an iteration boundary."""
        if not self.queued_reminders:
            return
        queued, self.queued_reminders = self.queued_reminders, []
        for reminder, recorded in queued:
            msg = reminder_message(reminder)
            if recorded:
                self.add(msg)
            else:
                self.add_model_only(msg)

    def take_hook_reminders(self, ctx: HookContext) -> None:
        """Queue the reminders a hook appended."""
        self.queued_reminders.extend(ctx.take_reminders())

    def hook_context(self, point: str) -> HookContext:
        """A fresh context for hook ``point``."""
        ctx = HookContext(agent=self.agent, values=self.values, hook_point=point)
        ctx.system_prompt = self.system_prompt
        ctx.turn = self
        return ctx

    # --- calls ------------------------------------------------------------------------------

    def set_call(self, call: ToolCall, state: CallState, *, error: str | None = None) -> None:
        """Record the state of a call (created on first sight, with governance fields)."""
        entry = self.calls.get(call.id)
        if entry is None:
            tool = self.tools.get(call.name)
            self.calls[call.id] = _CallEntry(
                call.id, call.name, state, error, tool.definition if tool is not None else None
            )
            return
        entry.update(state, error)

    def is_read_only(self, name: str) -> bool:
        """True if the tool named ``name`` is known and read-only."""
        tool = self.tools.get(name)
        return tool is not None and tool.definition.read_only

    # --- cancellation ---------------------------------------------------------------------------

    def check_soft_cancel(self) -> None:
        """Stop at this step boundary if a stop was requested."""
        c = self.cancel
        if c is not None and c.soft_cancel_requested:
            raise SoftCanceled(c.reason or "soft-canceled by the user")

    @property
    def stop_requested(self) -> bool:
        """True once any stop (soft or hard) was requested."""
        c = self.cancel
        return c is not None and c.soft_cancel_requested

    # --- usage ------------------------------------------------------------------------------

    def add_usage(self, usage: Usage) -> None:
        """Add one model call's usage to the invocation's."""
        self._usage = self._usage + usage
        if not usage.known:
            self.usage_unknown = True

    @property
    def claim_lost(self) -> BaseException | None:
        """The error of a lost session claim, if the claim was lost."""
        keeper = self.claim_keeper
        return keeper.lost if keeper is not None else None

    @property
    def usage(self) -> Usage:
        """Usage of this invocation: every model call's, summed."""
        return self._usage

    @property
    def turn_usage(self) -> Usage:
        """Usage of the whole turn (earlier parts of a resumed or folded turn included)."""
        return self.prior_usage + self.usage

    # --- events -------------------------------------------------------------------------------

    async def emit(self, event: AgentEvent) -> None:
        """Record and deliver an event; a handler failure ends the turn ``callback_error``."""
        self.items.append(event)
        if self.on_event is not None:
            await self.deliver(event)

    async def deliver(self, event: AgentEvent) -> None:
        """Deliver an event to the handler without keeping it in ``items`` (raw deltas)."""
        handler = self.on_event
        if handler is None:
            return
        try:
            out = handler(event)
            if inspect.isawaitable(out):
                await out
        except Exception as exc:
            raise EventHandlerError(f"the on_event handler raised: {exc!r}") from exc

    async def emit_serialized(self, event: AgentEvent) -> None:
        """``emit`` for events from concurrently running tools: one at a time."""
        if self._emit_lock is None:
            self._emit_lock = asyncio.Lock()
        async with self._emit_lock:
            await self.emit(event)

    def call_records(self, ids: Sequence[str] | None = None) -> tuple[ToolCallRecord, ...]:
        """Records of the given call ids (all calls when None), in order."""
        entries = (
            self.calls.values() if ids is None else [self.calls[i] for i in ids if i in self.calls]
        )
        return tuple(e.record() for e in entries)


class _CallEntry:
    """Mutable per-call state while the turn runs; frozen into a ``ToolCallRecord`` at the end."""

    __slots__ = ("_record", "definition", "error", "id", "name", "state")

    def __init__(
        self,
        id: str,
        name: str,
        state: CallState,
        error: str | None,
        definition: ToolDefinition | None,
    ) -> None:
        self.id = id
        self.name = name
        self.state: CallState = state
        self.error = error
        self.definition = definition
        self._record: ToolCallRecord | None = None

    def update(self, state: CallState, error: str | None) -> None:
        self.state = state
        if error is not None:
            self.error = error
        self._record = None

    def record(self) -> ToolCallRecord:
        """The frozen record (reused until the state changes)."""
        if self._record is None:
            self._record = self._build()
        return self._record

    def _build(self) -> ToolCallRecord:
        d = self.definition
        read_only = d is not None and d.read_only
        return ToolCallRecord(
            id=self.id,
            name=self.name,
            state=self.state,
            reconcile=self.state == "unknown" and not read_only,
            error=self.error,
            origin=d.origin if d is not None else None,
            tags=tuple(sorted(d.tags)) if d is not None else (),
            effect=d.effect_type if d is not None else None,
            risk=d.risk_level if d is not None else None,
        )
