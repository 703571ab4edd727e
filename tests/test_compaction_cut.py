"""Compaction over long histories with parallel tool exchanges, at every cut point.

Histories are drawn as units: user and assistant text, parallel tool exchanges whose results
arrive in any order, an earlier compaction summary at the start, and sometimes a trailing
call still waiting for its result. Every message weighs one token, so each
``keep_recent_tokens`` value from 0 to the history's length puts the raw cut at a different
index: every cut point is tried.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from dive.compaction import compact_messages
from dive.compaction._cut import choose_cut, complete_prefix
from dive.messages import (
    Message,
    TextBlock,
    ToolCall,
    ToolResult,
    complete_turn_boundary,
    validate_complete_turns,
)
from dive.testing import ScriptedModel

_ids = iter(range(1 << 40))


def _exchange(n: int, order: list[int]) -> list[Message]:
    calls = [ToolCall(id=f"c{next(_ids)}", name=f"t{k}", arguments={"k": k}) for k in range(n)]
    out = [Message.assistant("working", *calls)]
    for k in order:
        c = calls[k]
        out.append(
            Message.tool(
                ToolResult(tool_call_id=c.id, name=c.name, content=(TextBlock(text=f"r{k}"),))
            )
        )
    return out


@st.composite
def units(draw: st.DrawFn) -> list[Message]:
    kind = draw(st.sampled_from(["user", "assistant", "exchange"]))
    if kind == "user":
        return [Message.user(draw(st.text(min_size=1, max_size=8)))]
    if kind == "assistant":
        return [Message.assistant(draw(st.text(min_size=1, max_size=8)))]
    n = draw(st.integers(1, 4))
    order = draw(st.permutations(list(range(n))))
    return _exchange(n, list(order))


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(Message.user("<summary>earlier</summary>", kind="compaction_summary"))
    for unit in draw(st.lists(units(), min_size=0, max_size=14)):
        out.extend(unit)
    if draw(st.booleans()):  # a trailing call still waiting for some of its results
        n = draw(st.integers(1, 3))
        exchange = _exchange(n, list(range(n)))
        out.extend(exchange[: 1 + draw(st.integers(0, n - 1))])
    return out


def _unit_boundary(prefix: Sequence[Message], i: int) -> bool:
    return i == len(prefix) or (prefix[i].role != "tool" and complete_turn_boundary(prefix, i) == i)


def _check(history: list[Message], keep: int, keep_first: bool) -> None:
    cut = choose_cut(history, keep_recent_tokens=keep, keep_first=keep_first, tokens_of=lambda m: 1)
    end = complete_prefix(history)
    prefix = history[:end]
    assert 0 <= cut.head <= end
    assert cut.head <= cut.tail <= end or cut.empty
    assert _unit_boundary(prefix, cut.head)
    assert _unit_boundary(prefix, cut.tail)
    if cut.empty:
        return
    summary = Message.user("<summary>s</summary>", kind="compaction_summary")
    compacted = [*history[: cut.head], summary, *history[cut.tail :]]
    validate_complete_turns(compacted[: len(compacted) - (len(history) - end)])
    assert compacted[len(compacted) - (len(history) - end) :] == history[end:]  # pending kept
    kept_ids = {c.id for m in compacted for c in m.tool_calls}
    for m in compacted:  # every kept result is paired with a kept call, by id
        if m.tool_result is not None:
            assert m.tool_result.tool_call_id in kept_ids


@settings(max_examples=300, deadline=None)
@given(histories(), st.booleans())
def test_every_cut_point_keeps_whole_exchanges(history: list[Message], keep_first: bool) -> None:
    for keep in range(len(history) + 2):
        _check(history, keep, keep_first)


def _summariser() -> ScriptedModel:
    model = ScriptedModel()

    def answer(_: object) -> str:
        return "<summary>what happened</summary>"

    for _ in range(64):
        model.add(answer)
    return model


@settings(max_examples=60, deadline=None)
@given(histories(), st.integers(0, 40))
def test_compacted_histories_validate_and_start_at_a_turn_boundary(
    history: list[Message], keep: int
) -> None:
    result = asyncio.run(compact_messages(_summariser(), history, keep_recent_tokens=keep * 8))
    out = list(result.messages)
    pending = len(history) - complete_prefix(history)
    validate_complete_turns(out[: len(out) - pending])
    if not result.changed:
        assert out == history
        return
    assert result.summary is not None
    assert result.summary.kind == "compaction_summary"
    assert out == [*result.head, result.summary, *result.tail]
    assert history[: len(result.head)] == list(result.head)
    assert history[len(history) - len(result.tail) :] == list(result.tail)
    assert result.compacted == len(history) - len(result.head) - len(result.tail)
    tail_start = len(history) - len(result.tail)
    assert _unit_boundary(history[: complete_prefix(history)], tail_start)


def test_a_span_that_is_one_summary_is_not_compacted_again() -> None:
    history = [
        Message.user("<summary>s</summary>", kind="compaction_summary"),
        Message.user("next"),
        Message.assistant("ok"),
    ]
    result = asyncio.run(compact_messages(_summariser(), history, keep_recent_tokens=100))
    assert not result.changed
    cut = choose_cut(history, keep_recent_tokens=2, tokens_of=lambda m: 1)
    assert cut.empty
