"""History validation: complete tool turns, safe cut points and the shared view.

These are pure functions over a message sequence, specified exactly in spec/messages.md §8-9.
Results match calls by ID, never by name.
"""

from __future__ import annotations

from collections.abc import Sequence

from dive.errors import IncompleteToolTurnError
from dive.messages._blocks import ToolCall
from dive.messages._message import Message

__all__ = ["complete_turn_boundary", "shared_view", "validate_complete_turns"]


def match_result(
    calls: tuple[ToolCall, ...], matched: list[bool], index_of: dict[str, int], result_id: str
) -> int:
    if result_id:
        k = index_of.get(result_id)
        if k is not None and not matched[k]:
            return k
        return next((k for k, c in enumerate(calls) if not matched[k] and not c.id), -1)
    return next((k for k in range(len(calls)) if not matched[k]), -1)


def _check_group(msgs: Sequence[Message], i: int, calls: tuple[ToolCall, ...]) -> None:
    index_of: dict[str, int] = {}
    for k, c in enumerate(calls):
        if c.id:
            if c.id in index_of:
                raise IncompleteToolTurnError(i, f'duplicate tool call ID "{c.id}"')
            index_of[c.id] = k
    matched = [False] * len(calls)
    for off in range(len(calls)):
        j = i + off + 1
        if j >= len(msgs):
            raise IncompleteToolTurnError(i, "tool-call group has an incomplete suffix")
        r = msgs[j]
        if r.tool_calls:
            raise IncompleteToolTurnError(j, "tool calls require the assistant role")
        if r.role != "tool":
            raise IncompleteToolTurnError(j, "non-tool message before tool-call group completed")
        result = r.tool_result
        if result is None:
            raise IncompleteToolTurnError(j, "tool message has no result")
        k = match_result(calls, matched, index_of, result.tool_call_id)
        if k < 0:
            raise IncompleteToolTurnError(j, "duplicate or unmatched tool result")
        matched[k] = True


def validate_complete_turns(messages: Sequence[Message]) -> None:
    """Check that every assistant tool call is answered by exactly one following result.

    Args:
        messages: the history to check, oldest first.

    Raises:
        IncompleteToolTurnError: with ``.index`` and ``.reason`` of the first problem.
    """
    i = 0
    n = len(messages)
    while i < n:
        m = messages[i]
        calls = m.tool_calls
        if calls and m.role != "assistant":
            raise IncompleteToolTurnError(i, "tool calls require the assistant role")
        if m.role == "tool" or m.tool_result is not None:
            if m.role != "tool":
                raise IncompleteToolTurnError(i, "tool results require the tool role")
            raise IncompleteToolTurnError(
                i,
                "orphan tool result" if m.tool_result is not None else "tool message has no result",
            )
        if not calls:
            i += 1
            continue
        _check_group(messages, i, calls)
        i += len(calls) + 1


def complete_turn_boundary(messages: Sequence[Message], preferred_start: int) -> int:
    """A cut index near ``preferred_start`` that never splits a tool exchange.

    Validates the whole history first. Moves at most one group: right, unless the group ends
    the history, in which case left to its start.

    Args:
        messages: the history, oldest first.
        preferred_start: the index where the cut would ideally go.
    """
    validate_complete_turns(messages)
    n = len(messages)
    start = min(max(preferred_start, 0), n)
    i = 0
    while i < n:
        k = len(messages[i].tool_calls)
        if k == 0:
            i += 1
            continue
        end = i + k + 1
        if i < start < end:
            return end if end < n else i
        i = end
    return start


def shared_view(messages: Sequence[Message]) -> list[Message]:
    """Remove private messages; tool messages follow the visibility of their call's message.

    Args:
        messages: the history, oldest first.
    """
    out: list[Message] = []
    owner_private = False
    for m in messages:
        if m.role == "tool":
            if not owner_private:
                out.append(m)
            continue
        owner_private = m.visibility == "private"
        if not owner_private:
            out.append(m)
    return out
