"""The encoder backstop: answer dangling tool calls in an outgoing request.

Every provider sends a request built from :func:`answer_dangling_calls` of its history, so a
client tool call that has no recorded result (a crash, a bug, a hand-edited history) is
answered with the "Unknown result" text in that request only. The stored history is never
changed, so a broken history never poisons later requests, and a valid one costs one pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from dive.messages._blocks import ContentBlock, TextBlock, ToolCall, ToolResult
from dive.messages._message import Message
from dive.messages._validate import match_result

__all__ = ["UNKNOWN_RESULT_TEXT", "answer_dangling_calls"]

UNKNOWN_RESULT_TEXT = (
    "Unknown result: the turn ended while this call was running. Its result was not recorded; "
    "it may have taken effect, so check before repeating it."
)
"""The answer given to a tool call whose result was never recorded."""


def _unknown(call: ToolCall) -> Message:
    result = ToolResult(
        tool_call_id=call.id,
        name=call.name,
        content=(TextBlock(text=UNKNOWN_RESULT_TEXT),),
        is_error=True,
    )
    return Message(role="tool", name=call.name, content=(result,))


def _answered_in_order(
    content: tuple[ContentBlock, ...], messages: Sequence[Message], start: int, end: int
) -> bool:
    """Whether ``messages[start:end]`` opens with one result per call, in call order.

    True for content without calls. The common case of a valid history, checked without
    allocating.
    """
    j = start
    for b in content:
        if isinstance(b, ToolCall):
            if j >= end:
                return False
            r = messages[j].tool_result
            if r is None or r.tool_call_id != b.id:
                return False
            j += 1
    return True


def _missing(calls: tuple[ToolCall, ...], results: Sequence[Message]) -> list[ToolCall]:
    """The calls that no message of ``results`` answers, in call order.

    Results are paired with calls exactly as :func:`dive.messages.validate_complete_turns`
    pairs them (by ID, never by name), so the answered history passes it.
    """
    index_of: dict[str, int] = {}
    for k, c in enumerate(calls):
        if c.id:
            index_of.setdefault(c.id, k)
    matched = [False] * len(calls)
    for m in results:
        r = m.tool_result
        if r is None:
            continue
        k = match_result(calls, matched, index_of, r.tool_call_id)
        if k >= 0:
            matched[k] = True
    return [c for k, c in enumerate(calls) if not matched[k]]


def answer_dangling_calls(messages: Sequence[Message]) -> Sequence[Message]:
    """Answer every client tool call that has no result with an "Unknown result".

    The results of an assistant message's tool calls are the ``tool`` messages that follow it
    contiguously, paired by ``tool_call_id``. For each call without one, a ``tool`` message
    holding an error ``ToolResult`` with :data:`UNKNOWN_RESULT_TEXT` is inserted right after the
    existing results of its group, in call order. Results already present keep their order.

    Args:
        messages: The history to send; never mutated.

    Returns:
        ``messages`` itself when no call is missing a result (a single pass that allocates
        nothing for a history whose results follow their calls in order), else a new tuple
        holding every original message, in order, plus the inserted answers.
    """
    out: list[Message] | None = None
    copied = 0
    n = len(messages)
    i = 0
    while i < n:
        m = messages[i]
        i += 1
        if m.role != "assistant":
            continue
        end = i
        while end < n and messages[end].role == "tool":
            end += 1
        if _answered_in_order(m.content, messages, i, end):
            i = end
            continue
        missing = _missing(m.tool_calls, messages[i:end])
        if missing:
            if out is None:
                out = []
            out.extend(messages[copied:end])
            out.extend(_unknown(c) for c in missing)
            copied = end
        i = end
    if out is None:
        return messages
    out.extend(messages[copied:])
    return tuple(out)
