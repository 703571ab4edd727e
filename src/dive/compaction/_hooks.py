"""The compaction hooks: ``compaction_hook`` (``pre_generation``) and the mid-turn one.

``compaction_hook`` runs once per turn, before the first model call. It measures the working
set (counted by the agent's model when it is a ``TokenCounter``, estimated otherwise) and,
at or over the threshold, summarises the history *before* this turn (the turn's own input
stays verbatim), replaces the working set, and — with a session, on a new turn — records the
compaction in the session ahead of the turn, so later turns load the compacted view and
nothing is summarised twice. A continued turn (already recorded) is compacted in the working
set only; a resume is left alone (its pending calls are still unanswered at this point: the
mid-turn hook can compact once their results are in).

``mid_turn_compaction_hook`` runs before every model call and changes only the working set
sent to the model (the turn's record keeps every message); it uses the context the provider
reported for the previous call when there was one.

Both fail open: a summariser failure is logged and the turn goes on uncompacted. The result
(a :class:`CompactionResult`, with the summariser's usage and cost) is put in
``ctx.values["dive.compaction"]`` and passed to ``on_compact``.
"""

from __future__ import annotations

import inspect
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from dive.agent import HookContext
from dive.compaction._compact import (
    DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_MAX_INPUT_TOKENS,
    DEFAULT_MAX_SUMMARY_TOKENS,
    DEFAULT_THRESHOLD,
    CompactionResult,
    compact_messages,
)
from dive.compaction._cut import complete_prefix
from dive.compaction._session import record
from dive.compaction._tokens import estimate_tokens, measure
from dive.errors import DiveError
from dive.llm import Model
from dive.messages import Message

__all__ = ["VALUES_KEY", "compaction_hook", "mid_turn_compaction_hook"]

VALUES_KEY = "dive.compaction"
"""Where the hooks leave their latest :class:`CompactionResult` in ``ctx.values``."""

OnCompact = Callable[[CompactionResult], Awaitable[None] | None]
log = logging.getLogger("dive.compaction")


class _Options:
    __slots__ = ("instructions", "keep_first", "keep_recent", "max_input", "max_summary", "model")

    def __init__(
        self,
        model: Model | None,
        keep_recent: int,
        keep_first: bool,
        instructions: str | None,
        max_input: int,
        max_summary: int,
    ) -> None:
        self.model = model
        self.keep_recent = keep_recent
        self.keep_first = keep_first
        self.instructions = instructions
        self.max_input = max_input
        self.max_summary = max_summary

    async def compact(self, ctx: HookContext[Any], messages: Sequence[Message]) -> CompactionResult:
        agent_model: Model = ctx.agent.model
        return await compact_messages(
            self.model or agent_model,
            messages,
            keep_recent_tokens=self.keep_recent,
            keep_first=self.keep_first,
            instructions=self.instructions,
            max_input_tokens=self.max_input,
            max_summary_tokens=self.max_summary,
            system=ctx.system_prompt,
            tools=ctx.agent.tool_definitions,
            counter=agent_model,
        )


async def _announce(ctx: HookContext[Any], result: CompactionResult, on: OnCompact | None) -> None:
    ctx.values[VALUES_KEY] = result
    log.info(
        "compacted %d messages: %d -> %d tokens (%s), %d summariser request(s), cost %s",
        result.compacted,
        result.tokens_before,
        result.tokens_after,
        result.measured,
        result.passes,
        "unknown" if result.cost is None else f"${result.cost:.4f}",
    )
    if on is not None:
        out = on(result)
        if inspect.isawaitable(out):
            await out


def _turn_start(messages: Sequence[Message], record_: Sequence[Message]) -> int | None:
    """Where the turn's own messages begin in the working set (None: not found)."""
    if not record_:
        return len(messages)
    first = record_[0]
    for i, m in enumerate(messages):
        if m is first:
            return i
    return None


async def _may_record(ctx: HookContext[Any]) -> bool:
    """True when this run is a new turn the session has not recorded yet."""
    if ctx.session is None or ctx.turn is None:
        return False
    snap = await ctx.session.load()
    turn = snap.open_turn
    return turn is None or (turn.status == "incomplete" and turn.id != ctx.turn.id)


def compaction_hook(
    model: Model | None = None,
    threshold: int = DEFAULT_THRESHOLD,
    *,
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
    keep_first: bool = True,
    instructions: str | None = None,
    max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS,
    max_summary_tokens: int = DEFAULT_MAX_SUMMARY_TOKENS,
    persist: bool = True,
    on_compact: OnCompact | None = None,
) -> Callable[[HookContext[Any]], Awaitable[None]]:
    """A ``pre_generation`` hook that compacts the history once it reaches ``threshold``.

    Use it as ``Hooks(pre_generation=[compaction_hook()])``.

    Args:
        model: the summariser (default: the agent's model).
        threshold: compact when the working set holds at least this many tokens.
        keep_recent_tokens: about how many tokens of recent history stay verbatim.
        keep_first: keep the first exchange verbatim.
        instructions: the summariser's system prompt.
        max_input_tokens: the most one summariser request may carry.
        max_summary_tokens: the summary's output limit.
        persist: record the compaction in the run's session (new turns only).
        on_compact: called with each :class:`CompactionResult` (sync or async).
    """
    options = _Options(
        model, keep_recent_tokens, keep_first, instructions, max_input_tokens, max_summary_tokens
    )

    async def compact_before_the_turn(ctx: HookContext[Any]) -> None:
        size = await measure(
            ctx.agent.model,
            ctx.messages,
            system=ctx.system_prompt,
            tools=ctx.agent.tool_definitions,
        )
        if size.tokens < threshold or complete_prefix(ctx.messages) < len(ctx.messages):
            return  # small enough, or a resume: its pending calls fix the working set for now
        start = _turn_start(ctx.messages, ctx.turn.messages if ctx.turn is not None else ())
        before = ctx.messages[:start] if start is not None else ctx.messages
        try:
            result = await options.compact(ctx, before)
            if not result.changed:
                return
            if start is not None and persist and await _may_record(ctx):
                assert ctx.session is not None
                result = await record(ctx.session, result)
                assert result.revision is not None
                ctx.note_session_write(result.revision)
        except DiveError as exc:
            log.warning("compaction before the turn failed (%s); going on uncompacted", exc)
            return
        rest = ctx.messages[start:] if start is not None else []
        ctx.messages = [*result.messages, *rest]
        await _announce(ctx, result, on_compact)

    return compact_before_the_turn


class _Reported:
    """The context each turn's previous model call was sent, as its provider reported it."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: OrderedDict[str, tuple[int, int, int]] = OrderedDict()

    def context(self, ctx: HookContext[Any]) -> int | None:
        turn = ctx.turn
        if turn is None:
            return None
        u = turn.usage
        now = (u.requests, u.total_input_tokens, u.output_tokens)
        last = self._seen.get(turn.id)
        self._seen[turn.id] = now
        self._seen.move_to_end(turn.id)
        while len(self._seen) > 1024:
            self._seen.popitem(last=False)
        if last is None or now[0] != last[0] + 1 or not u.known:
            return None
        if now[1] <= last[1]:
            return None  # no input reported (a real call always has some): measure instead
        sent = now[1] - last[1] + now[2] - last[2]  # the call's input, plus its answer
        answered = 0
        for i in range(len(ctx.messages) - 1, -1, -1):  # what came after it (tool results)
            if ctx.messages[i].role == "assistant":
                answered = i + 1
                break
        return sent + estimate_tokens(ctx.messages[answered:])


def mid_turn_compaction_hook(
    model: Model | None = None,
    threshold: int = DEFAULT_THRESHOLD,
    *,
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
    keep_first: bool = True,
    instructions: str | None = None,
    max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS,
    max_summary_tokens: int = DEFAULT_MAX_SUMMARY_TOKENS,
    on_compact: OnCompact | None = None,
) -> Callable[[HookContext[Any]], Awaitable[None]]:
    """A ``pre_iteration`` hook that shrinks the working set a long turn sends to the model.

    Use it as ``Hooks(pre_iteration=[mid_turn_compaction_hook()])``. The turn's record, and
    the session, keep every message; only what the model is sent is compacted.

    Args:
        model: the summariser (default: the agent's model).
        threshold: compact when the context reaches this many tokens (as the provider
            reported it for the previous call plus what was added since, else counted or
            estimated).
        keep_recent_tokens: about how many tokens of recent messages stay verbatim.
        keep_first: keep the first exchange (the turn's request) verbatim.
        instructions: the summariser's system prompt.
        max_input_tokens: the most one summariser request may carry.
        max_summary_tokens: the summary's output limit.
        on_compact: called with each :class:`CompactionResult` (sync or async).
    """
    options = _Options(
        model, keep_recent_tokens, keep_first, instructions, max_input_tokens, max_summary_tokens
    )
    reported = _Reported()

    async def compact_the_working_set(ctx: HookContext[Any]) -> None:
        tokens = reported.context(ctx)
        if tokens is None:
            size = await measure(
                ctx.agent.model,
                ctx.messages,
                system=ctx.system_prompt,
                tools=ctx.agent.tool_definitions,
            )
            tokens = size.tokens
        if tokens < threshold:
            return
        try:
            result = await options.compact(ctx, ctx.messages)
        except DiveError as exc:
            log.warning("mid-turn compaction failed (%s); going on uncompacted", exc)
            return
        if result.changed:
            ctx.messages = list(result.messages)
            await _announce(ctx, result, on_compact)

    return compact_the_working_set
