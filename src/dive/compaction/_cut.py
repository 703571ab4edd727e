"""Where a compaction cuts: a kept head, the span to summarise, a kept tail.

The cut never splits a tool exchange. A trailing call still waiting for its result (a
pending call) is never summarised: it and everything after it stay in the tail. The head is
the history's first unit (``complete_turn_boundary(messages, 1)``: the first message, or the
whole first tool exchange), kept so the original request survives verbatim; a history that
starts with a compaction summary has no head of its own (the summary is summarised again).
The tail is the most recent ``keep_recent_tokens`` worth of messages, moved with
``complete_turn_boundary`` so it starts at a unit boundary; a span that is exactly one
compaction summary is left alone (compacting is idempotent).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dive.errors import IncompleteToolTurnError
from dive.messages import Message, complete_turn_boundary, validate_complete_turns

__all__ = ["Cut", "choose_cut", "complete_prefix"]


@dataclass(frozen=True, slots=True)
class Cut:
    """``messages[:head]`` kept, ``messages[head:tail]`` summarised, ``messages[tail:]`` kept."""

    head: int
    tail: int

    @property
    def empty(self) -> bool:
        """Nothing to summarise."""
        return self.tail <= self.head


def complete_prefix(messages: Sequence[Message]) -> int:
    """The length of the longest valid prefix that leaves only a pending call group after it.

    Raises:
        IncompleteToolTurnError: the history is invalid somewhere other than a trailing
            group of calls still waiting for results.
    """
    try:
        validate_complete_turns(messages)
        return len(messages)
    except IncompleteToolTurnError as exc:
        last = max((i for i, m in enumerate(messages) if m.tool_calls), default=-1)
        if exc.index != last or "incomplete suffix" not in exc.reason:
            raise
        return last


def choose_cut(
    messages: Sequence[Message],
    *,
    keep_recent_tokens: int,
    keep_first: bool = True,
    tokens_of: Callable[[Message], int],
) -> Cut:
    """The cut of ``messages`` (see the module docstring).

    Args:
        messages: the history (valid, except perhaps a trailing pending call group).
        keep_recent_tokens: about how many tokens of recent messages stay verbatim.
        keep_first: keep the first unit verbatim.
        tokens_of: the token measure of one message.
    """
    end = complete_prefix(messages)
    prefix = messages[:end]
    head = 0
    if keep_first and prefix and prefix[0].kind != "compaction_summary":
        head = complete_turn_boundary(prefix, 1)
    kept = 0
    start = end
    while start > head:
        cost = tokens_of(prefix[start - 1])
        if kept + cost > keep_recent_tokens:
            break
        kept += cost
        start -= 1
    tail = max(complete_turn_boundary(prefix, start), head)
    span = prefix[head:tail]
    if len(span) == 1 and span[0].kind == "compaction_summary":
        return Cut(head, head)
    return Cut(head, tail)
