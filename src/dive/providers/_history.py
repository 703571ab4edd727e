"""The history a provider sends, shared by every request mapper."""

from __future__ import annotations

from collections.abc import Sequence

from dive.messages import Message, answer_dangling_calls

__all__ = ["sendable"]


def sendable(messages: Sequence[Message]) -> Sequence[Message]:
    """The messages a request carries: custom messages dropped, dangling calls answered.

    Custom messages are never sent, so they are dropped first: a call is answered by what the
    model will see. Any client tool call still without a result then gets the "Unknown result"
    answer (:func:`dive.messages.answer_dangling_calls`), in this request only.

    Args:
        messages: The request's history; never mutated.

    Returns:
        ``messages`` itself for a history with no custom messages and no dangling calls.
    """
    if any(m.kind == "custom" for m in messages):
        messages = [m for m in messages if m.kind != "custom"]
    return answer_dangling_calls(messages)
