"""Hooks: callables the loop invokes at fixed points, with fixed authority.

The authority is data: :data:`HOOK_POLICIES` says, per point, which context fields a hook may
change, what an ordinary exception does, and what ``HookAbort`` does. :func:`run_hooks` is
the one runner that applies it; assigning a field the point does not allow raises
``HookPolicyError``, which is then handled like any other exception of that hook. The loop
reaches every point through ``Run.hook(point, **inputs)``, which hands back only what that
point may change. This table is generated from :data:`HOOK_POLICIES` (``hook_table()``):

<hook table>

"raise" raises from ``run()`` (before the turn boundary, nothing changed); "end turn" ends
the turn incomplete (``error``, or ``hook_abort`` with ``outcome.hook`` naming the point);
"deny call" answers the call ``is_error`` with the exception's text (all hooks still run);
"log" logs and goes on. Every point may mutate ``ctx.values`` (shared for the invocation)
and queue reminders with ``ctx.append_reminder``. A working set (``messages``) a hook
returns must be a valid history (every tool call answered); otherwise the hook failed and
the turn keeps the previous working set. ``on_suspend`` aborting closes the pending calls as
``cancel_suspended_turn`` does. Extension hooks run after the caller's.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Generic, Literal

from typing_extensions import TypeVar

from dive.errors import HookAbort, HookPolicyError, MessageValidationError
from dive.llm import ModelSettings, Usage
from dive.messages import Message, ToolCall, ToolResult, validate_complete_turns
from dive.sessions import Session
from dive.tools import Tool
from dive.turns import Reminder, TurnOutcome, TurnView

__all__ = [
    "HOOK_POINTS",
    "HOOK_POLICIES",
    "Hook",
    "HookContext",
    "HookPolicy",
    "HookOutput",
    "HookPoint",
    "HookRun",
    "Hooks",
    "SessionStartResult",
    "StopDecision",
    "hook_table",
    "run_hooks",
]

Hook = Callable[["HookContext[Any]"], Awaitable[Any] | Any]

HookPoint = Literal[
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
]
"""The points the loop runs hooks at (each a field of :class:`Hooks`)."""

OnError = Literal["raise", "end_turn", "deny", "log"]


@dataclass(frozen=True, slots=True, kw_only=True)
class HookPolicy:
    """One row of the hook table.

    Attributes:
        may_change: the context fields a hook at this point may assign.
        on_error: what an ordinary exception does: ``raise`` (from ``run()``), ``end_turn``,
            ``deny`` (the call) or ``log``.
        on_abort: what ``HookAbort`` does: ``raise``, ``end_turn`` or ``log``.
        returns: what a hook may return for the loop to act on (shown in the table).
        note: a remark shown in the table (``observe``, ``notify``…).
        sees_turn: the context carries a view of the turn (``ctx.turn``).
    """

    may_change: frozenset[str] = frozenset()
    on_error: OnError = "log"
    on_abort: Literal["raise", "end_turn", "log"] = "end_turn"
    returns: str = ""
    note: str = ""
    sees_turn: bool = True


_WORKING = frozenset({"system_prompt", "messages"})
_TOOL = frozenset({"tool_result", "additional_context"})

HOOK_POLICIES: Mapping[HookPoint, HookPolicy] = {
    "session_start": HookPolicy(
        on_error="raise", on_abort="raise", returns="SessionStartResult", sees_turn=False
    ),
    "pre_generation": HookPolicy(may_change=_WORKING, on_error="end_turn"),
    "pre_iteration": HookPolicy(
        may_change=_WORKING | {"model_settings"},
        on_error="end_turn",
        note="model-facing only",
    ),
    "pre_tool_use": HookPolicy(
        may_change=frozenset({"updated_input", "approved", "additional_context"}),
        on_error="deny",
    ),
    "post_tool_use": HookPolicy(may_change=_TOOL),
    "post_tool_use_failure": HookPolicy(may_change=_TOOL),
    "stop": HookPolicy(returns="StopDecision(continue_=True, ...)"),
    "post_generation": HookPolicy(on_abort="log", note="observe"),
    "on_suspend": HookPolicy(note="notify"),
    "on_incomplete_turn": HookPolicy(
        may_change=frozenset({"output_messages", "outcome"}), on_abort="log"
    ),
    "post_background_tool_use": HookPolicy(on_abort="log", note="observe"),
}
"""The hook table as data: what each point may change and what its exceptions do."""

HOOK_POINTS: tuple[HookPoint, ...] = tuple(HOOK_POLICIES)

# The order fields are listed in the table.
_FIELD_ORDER = (
    "system_prompt",
    "messages",
    "model_settings",
    "updated_input",
    "approved",
    "tool_result",
    "additional_context",
    "output_messages",
    "outcome",
)
_ON = {"raise": "raise", "end_turn": "end turn", "deny": "deny call", "log": "log"}


def _changes(policy: HookPolicy) -> str:
    names = [f"``{n}``" for n in _FIELD_ORDER if n in policy.may_change]
    text = ", ".join(names)
    if policy.returns:
        text = f"{text}; returns ``{policy.returns}``" if text else f"returns ``{policy.returns}``"
    text = text or "nothing"
    return f"{text} ({policy.note})" if policy.note else text


def hook_table(style: Literal["rst", "markdown"] = "rst") -> str:
    """The hook table rendered from :data:`HOOK_POLICIES` (reStructuredText or Markdown).

    Args:
        style: ``"rst"`` (this module's docstring) or ``"markdown"`` (the docs page).
    """
    rows = [
        (f"``{point}``", _changes(p), _ON[p.on_error], _ON[p.on_abort])
        for point, p in HOOK_POLICIES.items()
    ]
    head = ("hook", "may change", "exception", "HookAbort")
    if style == "markdown":
        md = [tuple(c.replace("``", "`") for c in r) for r in rows]
        lines = ["| " + " | ".join(head) + " |", "|---|---|---|---|"]
        return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in md])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    rule = "  ".join("=" * w for w in widths)

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([rule, line(head), rule, *(line(r) for r in rows), rule])


_GUARDED: frozenset[str] = frozenset(
    name for p in HOOK_POLICIES.values() for name in p.may_change if name != "outcome"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class StopDecision:
    """Returned by a ``stop`` hook to make the loop continue with ``reason`` as input.

    Attributes:
        continue_: continue the loop instead of finishing.
        reason: the input the loop continues with (a ``stop-continuation`` reminder).
    """

    continue_: bool = False
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStartResult:
    """Returned by a ``session_start`` hook: messages to put ahead of the input.

    With ``persist=True`` they are recorded as the start of the turn (saved with it, so later
    turns see them); otherwise the model sees them during this invocation only.

    Attributes:
        messages: messages put ahead of the input.
        persist: record them as the start of the turn (True) or show them to the model during this
            invocation only.
    """

    messages: tuple[Message, ...] = ()
    persist: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Hooks:
    """Hook lists by point. Pass callables (sync or async) taking a ``HookContext``.

    Attributes:
        session_start: before the turn begins, when the history is empty and the run is not a resume
            or continue; may return a ``SessionStartResult``.
        pre_generation: once, after the turn begins; may change ``system_prompt`` and ``messages``.
        pre_iteration: before every model call; may change ``system_prompt``, ``messages``
            (model-facing only) and ``model_settings``.
        pre_tool_use: before each call; may set ``updated_input``, ``approved`` and
            ``additional_context``; an exception denies the call.
        post_tool_use: after a successful call; may replace ``tool_result``.
        post_tool_use_failure: after a failed call (an exception or an ``is_error`` result).
        stop: on the final answer of a completed turn; may return ``StopDecision`` to continue.
        post_generation: at the end of a completed or suspended turn (observe).
        on_suspend: when the turn newly suspends, before it is saved (notify).
        on_incomplete_turn: when the turn ends incomplete, before it is saved; may change
            ``output_messages`` and the outcome.
        post_background_tool_use: when a late background result is delivered (observe).
    """

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
        """These hooks followed by ``other``'s, point by point.

        Args:
            other: the hooks to run after these (None changes nothing).
        """
        if other is None:
            return self
        return Hooks(
            **{f.name: (*getattr(self, f.name), *getattr(other, f.name)) for f in fields(self)}
        )

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


DepsT = TypeVar("DepsT", default=None)


class HookContext(Generic[DepsT]):
    """What a hook sees, and the fields it may change (see the module table).

    Attributes:
        agent: the ``Agent`` running the turn.
        deps: the run's dependencies (``run(deps=...)``; annotate ``HookContext[Deps]``).
        session: the run's session (None when stateless).
        values: shared values for the invocation (every hook may mutate them).
        hook_point: the point this context is for.
        turn: a read-only view of the turn (None at ``session_start``).
        session_start_source: ``"new"`` at ``session_start``.
        system_prompt: the system prompt (``pre_generation`` / ``pre_iteration`` may change).
        messages: the model-facing working set (``pre_generation`` / ``pre_iteration``).
        model_settings: per-call settings (``pre_iteration``).
        result: the ``RunResult`` (``post_generation``).
        output_messages: the turn's messages (``on_incomplete_turn`` may change what is saved).
        usage: this invocation's usage (end hooks).
        tool: the tool being called (tool hooks).
        call: the model's tool call (tool hooks).
        tool_result: the call's result (``post_tool_use*`` may replace it).
        updated_input: arguments that replace the call's (``pre_tool_use``).
        approved: ``True`` lets a call through the approval gate (``pre_tool_use``).
        additional_context: text that follows the call's result (``pre_tool_use`` and
            ``post_tool_use*``).
        stop_hook_active: True when ``stop`` hooks re-check after a continuation.
        iteration: the zero-based model call of the turn (``pre_iteration``).
    """

    __slots__ = (
        "_policy",
        "_reminders",
        "_session_write",
        "additional_context",
        "agent",
        "approved",
        "call",
        "deps",
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

    def __init__(
        self,
        *,
        agent: Any,
        values: dict[str, Any],
        hook_point: HookPoint,
        session: Session | None = None,
        turn: TurnView | None = None,
        deps: Any = None,
    ) -> None:
        self._policy: HookPolicy | None = None
        self.agent: Any = agent
        self.deps: DepsT = deps
        self.values = values
        self.hook_point = hook_point
        self.session = session
        self.turn = turn
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
        self._reminders: list[tuple[Reminder, bool]] = []
        self._session_write: int | None = None

    if not TYPE_CHECKING:

        def __setattr__(self, name: str, value: Any) -> None:
            policy = getattr(self, "_policy", None)
            if policy is not None and name in _GUARDED and name not in policy.may_change:
                allowed = ", ".join(sorted(policy.may_change)) or "nothing"
                raise HookPolicyError(
                    f"{self.hook_point} hooks may not change ctx.{name} (they may change: "
                    f"{allowed})"
                )
            object.__setattr__(self, name, value)

    @property
    def outcome(self) -> TurnOutcome | None:
        """How an incomplete turn ended (``on_incomplete_turn`` may replace it)."""
        return self.turn.outcome if self.turn is not None else None

    @outcome.setter
    def outcome(self, value: TurnOutcome) -> None:
        if self.turn is None:
            raise HookPolicyError(f"{self.hook_point} hooks have no turn outcome to change")
        self.turn.outcome = value

    def append_reminder(self, reminder: Reminder, *, recorded: bool = False) -> None:
        """Queue a reminder for the next iteration boundary (saved when ``recorded``).

        Args:
            reminder: the reminder.
            recorded: save it with the turn (True) or show it to the model only.
        """
        self._reminders.append((reminder, recorded))

    def take_reminders(self) -> list[tuple[Reminder, bool]]:
        """The queued reminders, clearing the queue."""
        out, self._reminders = self._reminders, []
        return out

    def note_session_write(self, revision: int) -> None:
        """Report that this ``pre_generation`` hook wrote to the run's session itself.

        A hook that records something ahead of the new turn (a compaction) passes the
        revision its write returned, so the turn's own write expects that revision instead
        of being refused as stale. Only ``pre_generation`` hooks may, before the turn has
        written anything; a resumed or continued turn's session must not be written to.

        Args:
            revision: the revision the hook's write returned.
        """
        if self.hook_point != "pre_generation":
            raise HookPolicyError(
                f"{self.hook_point} hooks may not write to the session; only pre_generation "
                "hooks may (before the turn's first write)"
            )
        object.__setattr__(self, "_session_write", revision)

    def take_session_write(self) -> int | None:
        """The revision a hook reported with :meth:`note_session_write`, clearing it."""
        out = self._session_write
        object.__setattr__(self, "_session_write", None)
        return out

    def _arm(self, policy: HookPolicy | None) -> None:
        object.__setattr__(self, "_policy", policy)


@dataclass(slots=True)
class HookRun:
    """What running one point's hooks produced."""

    returned: list[Any] = field(default_factory=list[Any])
    denial: BaseException | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HookOutput:
    """What one point's hooks may hand back to the loop, and nothing else.

    Attributes:
        changed: each field the point may change (its row of :data:`HOOK_POLICIES`), as
            the hooks left it.
        returned: what the hooks returned, in order.
        denial: the first exception of a ``deny`` point's hooks, if any.
        reminders: reminders the hooks queued, with their ``recorded`` flag.
    """

    changed: Mapping[str, Any]
    returned: tuple[Any, ...] = ()
    denial: BaseException | None = None
    reminders: tuple[tuple[Reminder, bool], ...] = ()


def _check_working(before: tuple[Message, ...], ctx: HookContext) -> None:
    after = ctx.messages
    if len(after) == len(before) and all(a is b for a, b in zip(after, before, strict=True)):
        return
    try:
        validate_complete_turns(after)
    except MessageValidationError as exc:
        raise HookPolicyError(
            f"the {ctx.hook_point} hook returned an invalid working set ({exc}); every tool "
            "call must keep its result"
        ) from exc


async def run_hooks(
    point: HookPoint, hooks: Sequence[Hook], ctx: HookContext, log: logging.Logger
) -> HookRun:
    """Run ``hooks`` for ``point`` under its row of :data:`HOOK_POLICIES`.

    Exceptions the row says end the turn or raise propagate (``HookAbort.hook`` set to the
    point); "deny" collects the first exception in ``HookRun.denial`` and runs the rest;
    "log" logs. A hook that fails leaves the fields it set before failing as they are, except
    an invalid working set, which is restored.
    """
    policy = HOOK_POLICIES[point]
    out = HookRun()
    checks_working = "messages" in policy.may_change
    ctx._arm(policy)  # pyright: ignore[reportPrivateUsage]
    try:
        for hook in hooks:
            before = tuple(ctx.messages) if checks_working else ()
            try:
                value = hook(ctx)
                if inspect.isawaitable(value):
                    value = await value
                if checks_working:
                    _check_working(before, ctx)
            except HookAbort as exc:
                if exc.hook is None:
                    exc.hook = point
                if policy.on_abort != "log":
                    raise
                log.exception("%s hook raised HookAbort, which is only logged here", point)
                continue
            except Exception as exc:
                if checks_working and isinstance(exc, HookPolicyError):
                    object.__setattr__(ctx, "messages", list(before))
                if policy.on_error in ("raise", "end_turn"):
                    raise
                if policy.on_error == "deny":
                    out.denial = out.denial or exc
                    continue
                log.exception("%s hook failed", point)
                continue
            out.returned.append(value)
    finally:
        ctx._arm(None)  # pyright: ignore[reportPrivateUsage]
    return out


__doc__ = (__doc__ or "").replace("<hook table>", hook_table())
