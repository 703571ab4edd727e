"""Hooks: callables the loop invokes at fixed points, with fixed authority.

Each hook receives a :class:`HookContext` and may change only what its point allows:

===========================  ==============================================  ======================
hook                         may change                                      other exceptions
===========================  ==============================================  ======================
``session_start``            returns ``SessionStartResult``                  raised from ``run()``
``pre_generation``           ``system_prompt``, ``messages``, ``values``      incomplete ``error``
``pre_iteration``            ``system_prompt``, ``messages`` (model-facing    incomplete ``error``
                             only), ``model_settings``
``pre_tool_use``             ``updated_input``, ``approved``,                 denies the call
                             ``additional_context``
``post_tool_use``            ``tool_result``, ``additional_context``,         logged
                             reminders
``post_tool_use_failure``    as ``post_tool_use``                             logged
``stop``                     returns ``StopDecision(continue_=True, reason)``  logged
``post_generation``          observe                                          logged
``on_suspend``               observe (notify)                                 logged
``on_incomplete_turn``       ``output_messages``, ``turn.outcome``            logged
``post_background_tool_use`` observe                                          logged
===========================  ==============================================  ======================

``HookAbort`` from any hook other than ``session_start``, ``on_incomplete_turn`` and
``post_background_tool_use`` ends the turn incomplete with reason ``hook_abort``. Extension
hooks run after the caller's.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from dive.messages import Message, ToolCall, ToolResult

if TYPE_CHECKING:
    from dive.agent._reminders import Reminder
    from dive.llm import ModelSettings, Usage
    from dive.tools import Tool

__all__ = [
    "HOOK_POINTS",
    "Hook",
    "HookContext",
    "Hooks",
    "SessionStartResult",
    "StopDecision",
    "call_hook",
]

log = logging.getLogger("dive.hooks")

Hook = Callable[["HookContext"], Awaitable[Any] | Any]

HOOK_POINTS = (
    "session_start",
    "pre_generation",
    "pre_iteration",
    "pre_tool_use",
    "post_tool_use",
    "post_tool_use_failure",
    "stop",
    "post_generation",
    "on_suspend",
    "on_incomplete_turn",
    "post_background_tool_use",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class StopDecision:
    """Returned by a ``stop`` hook to make the loop continue with ``reason`` as input."""

    continue_: bool = False
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStartResult:
    """Returned by a ``session_start`` hook: messages to put ahead of the input."""

    messages: tuple[Message, ...] = ()
    persist: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Hooks:
    """Hook lists by point. Pass callables (sync or async) taking a ``HookContext``."""

    session_start: Sequence[Hook] = ()
    pre_generation: Sequence[Hook] = ()
    pre_iteration: Sequence[Hook] = ()
    pre_tool_use: Sequence[Hook] = ()
    post_tool_use: Sequence[Hook] = ()
    post_tool_use_failure: Sequence[Hook] = ()
    stop: Sequence[Hook] = ()
    post_generation: Sequence[Hook] = ()
    on_suspend: Sequence[Hook] = ()
    on_incomplete_turn: Sequence[Hook] = ()
    post_background_tool_use: Sequence[Hook] = ()

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, tuple):
                object.__setattr__(self, f.name, tuple(value))

    def merged(self, other: Hooks | None) -> Hooks:
        """These hooks followed by ``other``'s, point by point."""
        if other is None:
            return self
        return Hooks(
            **{f.name: (*getattr(self, f.name), *getattr(other, f.name)) for f in fields(self)}
        )

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


class HookContext:
    """What a hook sees, and the fields it may change (see the module table)."""

    __slots__ = (
        "_reminders",
        "additional_context",
        "agent",
        "approved",
        "call",
        "hook_point",
        "iteration",
        "messages",
        "model_settings",
        "output_messages",
        "result",
        "session",
        "session_start_source",
        "stop_hook_active",
        "system_prompt",
        "tool",
        "tool_result",
        "turn",
        "updated_input",
        "usage",
        "values",
    )

    def __init__(self, *, agent: Any, values: dict[str, Any], hook_point: str) -> None:
        self.agent = agent
        self.values = values
        self.hook_point = hook_point
        self.session: Any = None
        self.session_start_source: str | None = None
        self.system_prompt: str = ""
        self.messages: list[Message] = []
        self.model_settings: ModelSettings | None = None
        self.result: Any = None
        self.output_messages: list[Message] = []
        self.usage: Usage | None = None
        self.tool: Tool | None = None
        self.call: ToolCall | None = None
        self.tool_result: ToolResult | None = None
        self.updated_input: dict[str, Any] | None = None
        self.approved: bool | None = None
        self.additional_context: str | None = None
        self.stop_hook_active = False
        self.iteration = 0
        self.turn: Any = None
        self._reminders: list[tuple[Reminder, bool]] = []

    def append_reminder(self, reminder: Reminder, *, recorded: bool = False) -> None:
        """Queue a reminder for the next iteration boundary (saved when ``recorded``)."""
        self._reminders.append((reminder, recorded))

    def take_reminders(self) -> list[tuple[Reminder, bool]]:
        """The queued reminders, clearing the queue."""
        out, self._reminders = self._reminders, []
        return out


async def call_hook(hook: Hook, ctx: HookContext) -> Any:
    """Call a sync or async hook."""
    out = hook(ctx)
    if inspect.isawaitable(out):
        out = await out
    return out
