"""Compaction: the summariser inside its budget, sessions, the hooks, their cost report."""

from __future__ import annotations

import pytest

from dive.agent import Agent, HookContext, Hooks
from dive.compaction import (
    VALUES_KEY,
    CompactionResult,
    compact_messages,
    compact_session,
    compaction_hook,
    estimate_tokens,
    mid_turn_compaction_hook,
    should_compact,
)
from dive.errors import SuspendedSessionError
from dive.llm import ModelRequest, ModelResponse, Usage
from dive.messages import Message, TextBlock, ToolCall, ToolResult, validate_complete_turns
from dive.sessions import MemorySessionStore, SQLiteSessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import Suspend, tool

BIG = "lorem ipsum dolor sit amet " * 80  # about 2,160 characters


def long_history(turns: int) -> list[Message]:
    out: list[Message] = []
    for i in range(turns):
        out.append(Message.user(f"question {i}: {BIG}"))
        c1 = ToolCall(id=f"a{i}", name="read", arguments={"path": f"f{i}"})
        c2 = ToolCall(id=f"b{i}", name="grep", arguments={"q": "x"})
        out.append(Message.assistant(c1, c2))
        out.append(
            Message.tool(
                ToolResult(tool_call_id=f"b{i}", name="grep", content=(TextBlock(text=BIG),))
            )
        )
        out.append(
            Message.tool(
                ToolResult(tool_call_id=f"a{i}", name="read", content=(TextBlock(text=BIG),))
            )
        )
        out.append(Message.assistant(f"answer {i}"))
    return out


class BoundedSummariser(ScriptedModel):
    """Answers every request with a summary; fails the test on a request over budget."""

    def __init__(self, budget: int) -> None:
        super().__init__(name="summariser")
        self.budget = budget
        self.sizes: list[int] = []
        for _ in range(200):
            self.add(self._answer)

    def _answer(self, request: ModelRequest) -> ModelResponse:
        size = estimate_tokens(request.messages, system=request.system)
        self.sizes.append(size)
        assert size <= self.budget, f"a summariser request of {size} tokens > {self.budget}"
        n = len(self.sizes)
        return text(
            f"<summary>summary after pass {n}</summary>",
            usage=Usage(input_tokens=size, output_tokens=10, requests=1, cost=0.001),
        )


class CountingSummariser(BoundedSummariser):
    """A TokenCounter that counts more tokens than the estimate does (1 per 2 characters)."""

    async def count_tokens(self, request: ModelRequest) -> int:
        chars = len(request.system) + sum(len(m.text) for m in request.messages)
        return chars // 2

    def _answer(self, request: ModelRequest) -> ModelResponse:
        chars = len(request.system) + sum(len(m.text) for m in request.messages)
        assert chars // 2 <= self.budget, f"a counted request of {chars // 2} > {self.budget}"
        self.sizes.append(chars // 2)
        return text(f"<summary>counted pass {len(self.sizes)}</summary>")


async def test_the_summariser_stays_inside_its_window_on_a_history_ten_times_larger() -> None:
    history = long_history(110)
    total = estimate_tokens(history)
    budget = 20_000
    assert total > 10 * budget
    model = BoundedSummariser(budget)
    result = await compact_messages(
        model, history, keep_recent_tokens=2_000, max_input_tokens=budget, max_summary_tokens=1_000
    )
    assert result.changed
    assert result.passes == len(model.sizes) > 1  # a summary of a summary
    assert max(model.sizes) <= budget
    later = model.requests[1].messages[0].text
    assert "summary after pass 1" in later  # each pass builds on the summary so far
    assert result.summary is not None
    assert "summary after pass" in result.summary.text
    assert result.usage.requests == result.passes
    assert result.cost == pytest.approx(0.001 * result.passes)
    assert result.tokens_after < result.tokens_before / 5
    assert result.head == (history[0],)
    validate_complete_turns(result.messages)
    assert result.summary.metadata["compacted_messages"] == str(result.compacted)


async def test_a_counting_summariser_splits_requests_its_count_finds_too_big() -> None:
    history = long_history(20)
    budget = 12_000
    model = CountingSummariser(budget)
    result = await compact_messages(
        model, history, keep_recent_tokens=500, max_input_tokens=budget, max_summary_tokens=500
    )
    assert result.changed
    assert max(model.sizes) <= budget
    assert result.measured == "counted"


def test_should_compact_reads_the_total_input_tokens() -> None:
    assert not should_compact(None)
    assert should_compact(100_000)
    assert not should_compact(99_999)
    usage = Usage(
        input_tokens=10, cache_read_input_tokens=60_000, cache_creation_input_tokens=50_000
    )
    assert should_compact(usage)
    assert not should_compact(usage, threshold=200_000)


async def test_compact_session_records_an_event_and_keeps_the_originals(tmp_path: object) -> None:
    store = SQLiteSessionStore(f"{tmp_path}/s.db")
    session = store.session("s")
    model = ScriptedModel([text(f"answer {i}: {BIG}") for i in range(6)])
    agent = Agent(model=model, session=session)
    for i in range(6):
        await agent.run(f"question {i}: {BIG}")
    originals = await session.turns()
    before = await session.load()
    summariser = BoundedSummariser(150_000)
    result = await compact_session(session, summariser, keep_recent_tokens=1_500)
    assert result.changed
    assert result.revision == before.revision + 1
    snap = await session.load()
    assert snap.history == result.messages
    assert snap.history[1].kind == "compaction_summary"
    assert snap.history[0] == before.history[0]  # the first request, verbatim
    assert snap.history[-1] == before.history[-1]  # the tail, verbatim
    assert len(snap.history) < len(before.history)
    assert await session.turns() == originals  # nothing rewritten
    # the next turn starts from the compacted view
    model.add(text("and more"))
    await agent.run("next")
    sent = model.requests[-1].messages
    assert sent[1].kind == "compaction_summary"
    assert len(sent) == len(result.messages) + 1
    # compacting the compacted session again summarises the summary with the rest
    again = await compact_session(session, summariser, keep_recent_tokens=0)
    assert again.changed
    assert "summary after pass 1" in summariser.requests[-1].messages[0].text
    await store.close()


async def test_compact_session_refuses_a_suspended_session_before_asking_the_model() -> None:
    @tool
    async def ask() -> Suspend:
        """Ask."""
        return Suspend("which?")

    store = MemorySessionStore()
    session = store.session("s")
    model = ScriptedModel([text(BIG), tool_use(call("ask", {}, id="q"))])
    agent = Agent(model=model, tools=[ask], session=session)
    await agent.run("hi")
    await agent.run("go")
    summariser = BoundedSummariser(150_000)
    with pytest.raises(SuspendedSessionError):
        await compact_session(session, summariser, keep_recent_tokens=0)
    assert summariser.requests == []
    assert (await session.load()).open_turn is not None


async def test_the_hook_compacts_before_the_turn_and_records_it_once() -> None:
    store = MemorySessionStore()
    session = store.session("s")
    model = ScriptedModel([text(f"answer {i}: {BIG}") for i in range(4)])
    summariser = BoundedSummariser(150_000)
    seen: list[CompactionResult] = []
    hook = compaction_hook(
        summariser, threshold=3_000, keep_recent_tokens=700, on_compact=seen.append
    )
    agent = Agent(model=model, session=session, hooks=Hooks(pre_generation=[hook]))
    first = await agent.run(f"q0 {BIG}")
    assert summariser.requests == []  # under the threshold
    await agent.run(f"q1 {BIG}")
    await agent.run(f"q2 {BIG}")
    assert len(seen) == 1
    result = seen[0]
    assert result.revision is not None
    third = (await session.turns())[-1]
    assert third.persistence == "saved"  # the turn's own write expected the new revision
    sent = model.requests[2].messages
    assert sent[1].kind == "compaction_summary"
    assert sent[-1].text == f"q2 {BIG}"  # the turn's input stays verbatim
    snap = await session.load()
    assert snap.history[1] == result.summary
    assert [m.text for m in snap.history[-2:]] == [f"q2 {BIG}", f"answer 2: {BIG}"]
    assert len(await session.turns()) == 3
    assert (await session.turns())[0].id == first.turn.id
    # the next turn loads the compacted view: nothing is summarised twice
    await agent.run("short")
    assert len(summariser.requests) == 1
    assert len(seen) == 1


async def test_the_mid_turn_hook_shrinks_only_the_working_set() -> None:
    @tool
    def read(path: str) -> str:
        """Read a file."""
        return f"{path}: {BIG}"

    steps = [tool_use(call("read", {"path": f"f{i}"}, id=f"r{i}")) for i in range(8)]
    model = ScriptedModel([*steps, text("done")])
    summariser = BoundedSummariser(150_000)
    values: list[object] = []

    def spy(ctx: HookContext) -> None:
        values.append(ctx.values.get(VALUES_KEY))

    hook = mid_turn_compaction_hook(summariser, threshold=3_000, keep_recent_tokens=1_200)
    agent = Agent(model=model, tools=[read], hooks=Hooks(pre_iteration=[hook, spy]))
    result = await agent.run(f"read everything {BIG}")
    assert result.status == "completed"
    assert len(summariser.requests) >= 1
    last = model.requests[-1].messages
    assert any(m.kind == "compaction_summary" for m in last)
    assert last[0].text == f"read everything {BIG}"  # the request is kept
    validate_complete_turns(last)
    # the record keeps every message
    assert sum(1 for m in result.turn.messages if m.role == "tool") == 8
    assert not any(m.kind == "compaction_summary" for m in result.turn.messages)
    assert any(isinstance(v, CompactionResult) for v in values)


async def test_the_mid_turn_hook_uses_the_context_the_provider_reported() -> None:
    @tool
    def noop() -> str:
        """Nothing."""
        return "ok"

    big = Usage(input_tokens=90_000, output_tokens=10, requests=1)
    model = ScriptedModel(
        [
            tool_use(call("noop", {}, id="n1"), usage=big),
            tool_use(call("noop", {}, id="n2")),
            text("done"),
        ]
    )
    summariser = BoundedSummariser(150_000)
    hook = mid_turn_compaction_hook(summariser, threshold=80_000, keep_recent_tokens=0)
    agent = Agent(model=model, tools=[noop], hooks=Hooks(pre_iteration=[hook]))
    result = await agent.run("tiny request")
    assert result.status == "completed"
    assert len(summariser.requests) == 1  # only after the call reported 90,000 input tokens


async def test_a_failing_summariser_leaves_the_turn_uncompacted() -> None:
    store = MemorySessionStore()
    session = store.session("s")
    model = ScriptedModel([text(BIG), text("fine")])
    broken = ScriptedModel([text("")])  # no summary at all
    hook = compaction_hook(broken, threshold=10, keep_recent_tokens=0)
    agent = Agent(model=model, session=session, hooks=Hooks(pre_generation=[hook]))
    await agent.run(f"one {BIG}")
    second = await agent.run("two")
    assert second.status == "completed"
    assert not any(m.kind == "compaction_summary" for m in (await session.load()).history)


async def test_a_resumed_turn_is_left_alone_and_a_continued_one_compacted_in_memory() -> None:
    @tool
    async def ask() -> Suspend:
        """Ask."""
        return Suspend("which?")

    store = MemorySessionStore()
    session = store.session("s")
    model = ScriptedModel(
        [
            text(f"a {BIG}"),
            text(f"b {BIG}"),
            tool_use(call("ask", {}, id="q")),
            text("cut off", stop_reason="max_tokens"),
            text("thanks"),
        ]
    )
    agent = Agent(model=model, tools=[ask], session=session)
    await agent.run(f"one {BIG}")
    await agent.run(f"two {BIG}")
    await agent.run("three")
    summariser = BoundedSummariser(150_000)
    hook = compaction_hook(summariser, threshold=500, keep_recent_tokens=0)
    agent.hooks = Hooks(pre_generation=[hook])
    resumed = await agent.run(tool_results={"q": "the blue one"})
    assert resumed.status == "incomplete"  # cut off by the output limit
    assert resumed.outcome is not None
    assert resumed.outcome.reason == "output_limit"
    assert summariser.requests == []  # the resume's pending call: nothing compacted
    continued = await agent.run(continue_turn=True)
    assert continued.status == "completed"
    assert continued.persistence == "saved"
    assert len(summariser.requests) == 1
    assert model.requests[-1].messages[1].kind == "compaction_summary"
    assert not any(m.kind == "compaction_summary" for m in (await session.load()).history)


async def test_only_pre_generation_hooks_may_report_a_session_write() -> None:
    def misuse(ctx: HookContext) -> None:
        ctx.note_session_write(7)

    model = ScriptedModel([text("hi")])
    agent = Agent(model=model, hooks=Hooks(pre_iteration=[misuse]))
    result = await agent.run("go")
    assert result.status == "incomplete"
    assert "only pre_generation hooks may" in str(result.error)
