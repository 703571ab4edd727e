"""The session-store conformance suite: every store dive ships passes it; run it on yours.

Each check is an ``async`` function taking a fresh, empty store. Run them with any test
runner, e.g. with pytest::

    import pytest
    from dive.testing.session_conformance import CHECKS

    @pytest.mark.parametrize("check", CHECKS.values(), ids=CHECKS.keys())
    async def test_my_store(check):
        await check(MyStore(...))
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime

from dive.errors import (
    DiveError,
    NoTurnError,
    RevisionConflictError,
    SaveRejectedError,
    SessionClaimedError,
    SuspendedSessionError,
    UserError,
)
from dive.llm import Usage
from dive.messages import Message, TextBlock, ToolCall, ToolResult, validate_complete_turns
from dive.sessions import SessionStore
from dive.turns import (
    SCHEMA_VERSION,
    UNKNOWN_TEXT,
    PendingToolCall,
    SuspensionState,
    ToolCallRecord,
    Turn,
    TurnOutcome,
    new_turn_id,
)

__all__ = ["CHECKS", "Check", "turn"]

Check = Callable[[SessionStore], Awaitable[None]]
CHECKS: dict[str, Check] = {}


def check(fn: Check) -> Check:
    CHECKS[fn.__name__.removeprefix("check_")] = fn
    return fn


def turn(
    status: str = "completed",
    *,
    id: str | None = None,
    text: str = "hello",
    tokens: int = 10,
    outcome: TurnOutcome | None = None,
) -> Turn:
    """A small valid turn record for tests."""
    messages = (Message.user(text), Message.assistant(f"re: {text}"))
    calls: tuple[ToolCallRecord, ...] = ()
    suspension = None
    if status == "suspended":
        call = ToolCall(id="call_s", name="ask", arguments={"q": "?"})
        messages = (Message.user(text), Message.assistant(call))
        calls = (ToolCallRecord(id="call_s", name="ask", state="waiting"),)
        suspension = SuspensionState(
            turn_id=id or "x",
            pending_tool_calls=(PendingToolCall(id="call_s", name="ask", prompt="?"),),
        )
    if status == "running":
        call = ToolCall(id="call_r", name="act", arguments={})
        messages = (Message.user(text), Message.assistant(call))
        calls = (ToolCallRecord(id="call_r", name="act", state="running"),)
    if status == "incomplete" and outcome is None:
        outcome = TurnOutcome(reason="provider_error", next="continue", error="boom")
    tid = id or new_turn_id()
    if suspension is not None:
        suspension = replace(suspension, turn_id=tid)
    return Turn(
        id=tid,
        status=status,  # type: ignore[arg-type]
        messages=messages,
        tool_calls=calls,
        usage=Usage(input_tokens=tokens, output_tokens=tokens // 2, requests=1),
        outcome=outcome,
        suspension=suspension,
        created_at=datetime.now(UTC),
    )


async def _raises(exc: type[BaseException], coro: Awaitable[object]) -> BaseException:
    try:
        await coro
    except exc as err:
        return err
    raise AssertionError(f"expected {exc.__name__}")


@check
async def check_empty_session(store: SessionStore) -> None:
    snap = await store.load("empty")
    assert snap.revision == 0
    assert snap.open_turn is None
    assert snap.history == ()
    assert snap.latest_outcome is None
    assert await store.turns("empty") == []


@check
async def check_append_completed(store: SessionStore) -> None:
    t = turn()
    rev = await store.checkpoint("s", t, expected_revision=0)
    assert rev == 1
    snap = await store.load("s")
    assert snap.revision == 1
    assert snap.open_turn is None
    assert snap.history == t.messages
    [stored] = await store.turns("s")
    assert stored.id == t.id
    assert stored.messages == t.messages
    assert stored.revision == 1
    assert stored.persistence == "saved"


@check
async def check_round_trip_is_exact(store: SessionStore) -> None:
    call = ToolCall(id="c1", name="f", arguments={"nested": {"x": [1, 2.5, None, "é"]}})
    t = replace(
        turn(),
        messages=(
            Message.user("q"),
            Message.assistant("thinking out loud", call),
            Message.tool(ToolResult(tool_call_id="c1", name="f", content=(TextBlock(text="42"),))),
            Message.assistant("done"),
        ),
        tool_calls=(ToolCallRecord(id="c1", name="f", state="completed", tags=("a", "b")),),
    )
    await store.checkpoint("rt", t, expected_revision=0)
    [stored] = await store.turns("rt")
    assert stored == replace(t, revision=1, persistence="saved")


@check
async def check_stale_revision_writes_nothing(store: SessionStore) -> None:
    await store.checkpoint("s", turn(), expected_revision=0)
    err = await _raises(RevisionConflictError, store.checkpoint("s", turn(), expected_revision=0))
    assert "revision" in str(err)
    assert (await store.load("s")).revision == 1
    assert len(await store.turns("s")) == 1


@check
async def check_open_turn_is_replaced(store: SessionStore) -> None:
    t = turn("incomplete")
    await store.checkpoint("s", t, expected_revision=0)
    snap = await store.load("s")
    assert snap.open_turn is not None
    assert snap.open_turn.id == t.id
    assert snap.history == ()
    assert snap.latest_outcome == t.outcome
    done = replace(t, status="completed", outcome=None, usage=Usage(input_tokens=99))
    assert await store.checkpoint("s", done, expected_revision=1) == 2
    turns = await store.turns("s")
    assert [x.status for x in turns] == ["completed"]
    snap = await store.load("s")
    assert snap.open_turn is None
    assert snap.latest_outcome is None
    assert (await store.total_usage("s")).input_tokens == 99


@check
async def check_new_turn_supersedes_incomplete(store: SessionStore) -> None:
    old = turn("incomplete", text="first")
    await store.checkpoint("s", old, expected_revision=0)
    new = turn(text="second")
    await store.checkpoint("s", new, expected_revision=1)
    turns = await store.turns("s")
    assert [t.id for t in turns] == [old.id, new.id]
    assert turns[0].superseded
    assert turns[0].status == "incomplete"
    snap = await store.load("s")
    assert snap.history == old.messages + new.messages
    assert snap.open_turn is None


@check
async def check_suspended_blocks_append(store: SessionStore) -> None:
    s = turn("suspended")
    await store.checkpoint("s", s, expected_revision=0)
    await _raises(SuspendedSessionError, store.checkpoint("s", turn(), expected_revision=1))
    snap = await store.load("s")
    assert snap.revision == 1
    assert snap.open_turn is not None
    assert snap.open_turn.status == "suspended"
    assert snap.open_turn.suspension is not None


@check
async def check_recorded_turn_cannot_be_replaced(store: SessionStore) -> None:
    t = turn()
    await store.checkpoint("s", t, expected_revision=0)
    await store.checkpoint("s", turn(), expected_revision=1)
    await _raises(RevisionConflictError, store.checkpoint("s", t, expected_revision=2))
    assert (await store.load("s")).revision == 2


@check
async def check_running_turn_is_open(store: SessionStore) -> None:
    r = turn("running")
    await store.checkpoint("s", r, expected_revision=0)
    snap = await store.load("s")
    assert snap.open_turn is not None
    assert snap.open_turn.status == "running"


@check
async def check_list_pages_and_filters(store: SessionStore) -> None:
    for i in range(5):
        await store.checkpoint(f"l{i}", turn(), expected_revision=0)
        await asyncio.sleep(0.002)
    await store.checkpoint("susp", turn("suspended"), expected_revision=0)
    everything = await store.list()
    assert {i.id for i in everything} >= {"l0", "l1", "l2", "l3", "l4", "susp"}
    page = await store.list(limit=2, offset=1)
    assert [i.id for i in page] == [i.id for i in everything[1:3]]
    assert [i.id for i in await store.list(suspended=True)] == ["susp"]
    assert "susp" not in {i.id for i in await store.list(suspended=False)}
    info = next(i for i in everything if i.id == "l0")
    assert info.turn_count == 1
    assert info.revision == 1


@check
async def check_delete_is_idempotent(store: SessionStore) -> None:
    await store.checkpoint("d", turn(), expected_revision=0)
    await store.delete("d")
    await store.delete("d")
    assert (await store.load("d")).revision == 0


@check
async def check_fork(store: SessionStore) -> None:
    a = turn(text="a")
    await store.checkpoint("f", a, expected_revision=0)
    s = turn("suspended", text="b")
    await store.checkpoint("f", s, expected_revision=1)
    await store.fork("f", "f1")
    assert [t.id for t in await store.turns("f1")] == [a.id]
    await store.fork("f", "f2", include_open_turn=True)
    copied = await store.turns("f2")
    assert [t.id for t in copied] == [a.id, s.id]
    closed = copied[1]
    assert closed.status == "incomplete"
    assert closed.outcome is not None
    assert closed.outcome.reason == "canceled"
    validate_complete_turns([m for t in copied for m in t.messages])
    assert (await store.load("f")).open_turn is not None  # the source is unchanged
    await _raises(UserError, store.fork("f", "f1"))


@check
async def check_compaction_is_non_destructive(store: SessionStore) -> None:
    bad = turn("incomplete", outcome=TurnOutcome(reason="canceled", next="reconcile"))
    await store.checkpoint("c", turn(text="one"), expected_revision=0)
    await store.checkpoint("c", bad, expected_revision=1)
    rev = await store.compact("c", Message.user("summary of it all"))
    assert rev == 3
    snap = await store.load("c")
    assert snap.history[0].text == "summary of it all"
    assert snap.history[0].kind == "compaction_summary"
    assert snap.latest_outcome is not None
    assert snap.latest_outcome.next == "reconcile"
    assert len(await store.turns("c")) == 2
    await store.checkpoint("c", turn(text="after"), expected_revision=3)
    snap = await store.load("c")
    assert [m.text for m in snap.history] == ["summary of it all", "after", "re: after"]


@check
async def check_compaction_keeps_a_head_and_a_tail(store: SessionStore) -> None:
    first, second = turn(text="one"), turn(text="two")
    await store.checkpoint("k", first, expected_revision=0)
    await store.checkpoint("k", second, expected_revision=1)
    call = ToolCall(id="kc", name="look", arguments={})
    tail = (
        Message.assistant(call),
        Message.tool(ToolResult(tool_call_id="kc", name="look", content=(TextBlock(text="x"),))),
        *second.messages,
    )
    rev = await store.compact("k", Message.user("sum"), head=first.messages[:1], tail=tail)
    assert rev == 3
    snap = await store.load("k")
    assert [m.text for m in snap.history] == ["one", "sum", "", "", "two", "re: two"]
    assert snap.history[1].kind == "compaction_summary"
    validate_complete_turns(snap.history)
    assert [t.id for t in await store.turns("k")] == [first.id, second.id]  # originals kept
    await store.checkpoint("k", turn(text="three"), expected_revision=3)
    assert [m.text for m in (await store.load("k")).history][-2:] == ["three", "re: three"]
    # a view that splits a tool exchange is refused, nothing written
    await _raises(UserError, store.compact("k", Message.user("bad"), tail=tail[:1]))
    assert (await store.load("k")).revision == 4


@check
async def check_compaction_refuses_to_hide_an_open_turn(store: SessionStore) -> None:
    await store.checkpoint("o", turn(text="a"), expected_revision=0)
    await store.checkpoint("o", turn("suspended"), expected_revision=1)
    await _raises(SuspendedSessionError, store.compact("o", Message.user("sum")))
    snap = await store.load("o")
    assert snap.revision == 2
    assert snap.open_turn is not None
    assert snap.open_turn.status == "suspended"
    await store.checkpoint("r", turn("running"), expected_revision=0)
    await _raises(SaveRejectedError, store.compact("r", Message.user("sum")))
    running = (await store.load("r")).open_turn
    assert running is not None
    assert running.status == "running"


@check
async def check_remove_last_turn(store: SessionStore) -> None:
    await _raises(NoTurnError, store.remove_last_turn("r"))
    first, second = turn(), turn("suspended")
    await store.checkpoint("r", first, expected_revision=0)
    await store.checkpoint("r", second, expected_revision=1)
    await _raises(RevisionConflictError, store.remove_last_turn("r", expected_revision=1))
    assert await store.remove_last_turn("r", expected_revision=2) == 3
    assert [t.id for t in await store.turns("r")] == [first.id]
    assert (await store.load("r")).open_turn is None
    await store.compact("r", Message.user("s"))
    await _raises(NoTurnError, store.remove_last_turn("r"))


@check
async def check_usage_is_never_double_counted(store: SessionStore) -> None:
    t = turn("running", tokens=10)
    await store.checkpoint("u", t, expected_revision=0)
    await store.checkpoint("u", replace(t, usage=Usage(input_tokens=30)), expected_revision=1)
    await store.checkpoint("u", turn(tokens=4), expected_revision=2)
    assert (await store.total_usage("u")).input_tokens == 34


@check
async def check_claims(store: SessionStore) -> None:
    await store.claim("k", "alice", 30)
    await store.claim("k", "alice", 30)  # re-claim by the holder
    err = await _raises(SessionClaimedError, store.claim("k", "bob", 30))
    assert "alice" in str(err)
    await store.renew_claim("k", "alice", 30)
    await _raises(SessionClaimedError, store.renew_claim("k", "bob", 30))
    await store.release_claim("k", "bob")  # not bob's: nothing happens
    await _raises(SessionClaimedError, store.claim("k", "bob", 30))
    await store.release_claim("k", "alice")
    await store.claim("k", "bob", 0.05)
    await asyncio.sleep(0.1)
    await store.claim("k", "carol", 30)  # expired: taken over
    await _raises(SessionClaimedError, store.renew_claim("k", "bob", 30))


@check
async def check_invalid_ids_are_refused(store: SessionStore) -> None:
    for bad in ("", "a b", "x" * 129, "semi;colon", "../etc", "user-42\n", "\nuser-42", "a\tb"):
        await _raises(UserError, store.load(bad))
        await _raises(UserError, store.checkpoint(bad, turn(), expected_revision=0))
    assert [i.id for i in await store.list()] == []


@check
async def check_a_long_invalid_id_is_not_repeated(store: SessionStore) -> None:
    long = "y" * 10_000
    err = await _raises(UserError, store.load(long))
    assert len(str(err)) < 400, "the message should not repeat a 10k-character id"
    assert "10000" in str(err), "the message should give the id's length"


@check
async def check_newer_record_schema_is_refused(store: SessionStore) -> None:
    kept = turn("incomplete")
    await store.checkpoint("n", kept, expected_revision=0)
    newer = replace(kept, schema=SCHEMA_VERSION + 998)
    err = await _raises(DiveError, store.checkpoint("n", newer, expected_revision=1))
    assert str(SCHEMA_VERSION + 998) in str(err)
    [stored] = await store.turns("n")
    assert stored == replace(kept, revision=1, persistence="saved")
    assert (await store.load("n")).revision == 1


@check
async def check_every_write_advances_the_revision(store: SessionStore) -> None:
    revs = [await store.checkpoint("v", turn("incomplete"), expected_revision=0)]
    revs.append(await store.compact("v", Message.user("s")))
    revs.append(await store.checkpoint("v", turn(), expected_revision=revs[-1]))
    revs.append(await store.remove_last_turn("v"))
    assert revs == [1, 2, 3, 4]
    assert (await store.load("v")).revision == 4


@check
async def check_closed_history_stays_sendable(store: SessionStore) -> None:
    call = ToolCall(id="x1", name="act", arguments={})
    closed = replace(
        turn("incomplete"),
        messages=(
            Message.user("do it"),
            Message.assistant(call),
            Message.tool(
                ToolResult(
                    tool_call_id="x1", content=(TextBlock(text=UNKNOWN_TEXT),), is_error=True
                )
            ),
        ),
    )
    await store.checkpoint("h", closed, expected_revision=0)
    await store.checkpoint("h", turn(), expected_revision=1)
    validate_complete_turns((await store.load("h")).history)


def _steps_of(t: Turn, count: int) -> list[Turn]:
    """A running turn growing one tool call at a time, as step checkpoints write it."""
    out: list[Turn] = []
    messages = list(t.messages[:1])
    records: list[ToolCallRecord] = []
    for i in range(count):
        call = ToolCall(id=f"k{i}", name="act", arguments={"i": i})
        messages.append(Message.assistant(f"step {i}", call))
        records.append(ToolCallRecord(id=call.id, name="act", state="not_started"))
        out.append(replace(t, messages=tuple(messages), tool_calls=tuple(records), iterations=i))
        records[-1] = replace(records[-1], state="running")
        out.append(replace(out[-1], tool_calls=tuple(records), executed_tool_calls=i + 1))
        result = ToolResult(tool_call_id=call.id, name="act", content=(TextBlock(text=f"{i}"),))
        messages.append(Message.tool(result))
        records[-1] = replace(records[-1], state="completed")
        out.append(
            replace(
                out[-1],
                messages=tuple(messages),
                tool_calls=tuple(records),
                usage=Usage(input_tokens=10 * (i + 1), requests=i + 1),
            )
        )
    return out


async def _write_steps(store: SessionStore, sid: str, steps: list[Turn], rev: int) -> int:
    for s in steps:
        rev = await store.checkpoint(sid, s, expected_revision=rev)
        snap = await store.load(sid)
        assert snap.open_turn == replace(s, revision=rev, persistence="saved")
    return rev


@check
async def check_step_checkpoints_load_as_the_last_turn_written(store: SessionStore) -> None:
    first = turn("completed")
    rev = await store.checkpoint("st", first, expected_revision=0)
    t = turn("running")
    steps = _steps_of(t, 4)
    # a step may also rewrite the tail (a message replaced) and drop records
    steps.append(replace(steps[-1], messages=(*steps[-1].messages[:-1], Message.user("x"))))
    steps.append(replace(steps[-1], tool_calls=steps[-1].tool_calls[:2]))
    rev = await _write_steps(store, "st", steps, rev)
    assert await store.turns("st") == [
        replace(first, revision=1, persistence="saved"),
        replace(steps[-1], revision=rev, persistence="saved"),
    ]
    assert (await store.total_usage("st")).input_tokens == first.usage.input_tokens + 40
    done = replace(steps[-1], status="completed")
    rev = await store.checkpoint("st", done, expected_revision=rev)
    snap = await store.load("st")
    assert snap.open_turn is None
    assert snap.history == first.messages + done.messages
    assert (await store.turns("st"))[-1] == replace(done, revision=rev, persistence="saved")


@check
async def check_stepped_turn_supersede_fork_and_remove(store: SessionStore) -> None:
    steps = _steps_of(turn("running"), 3)
    rev = await _write_steps(store, "sf", steps, 0)
    err = await _raises(
        RevisionConflictError, store.checkpoint("sf", steps[0], expected_revision=0)
    )
    assert "revision" in str(err)
    assert (await store.load("sf")).open_turn == replace(
        steps[-1], revision=rev, persistence="saved"
    )
    await store.fork("sf", "sf2", include_open_turn=True)
    [forked] = await store.turns("sf2")
    assert forked.messages[: len(steps[-1].messages)] == steps[-1].messages
    nxt = turn("completed")
    rev = await store.checkpoint("sf", nxt, expected_revision=rev)
    old, new = await store.turns("sf")
    assert old.superseded
    assert old.messages == steps[-1].messages
    assert new.id == nxt.id
    await store.remove_last_turn("sf")
    await store.remove_last_turn("sf")
    assert await store.turns("sf") == []
    again = _steps_of(turn("running"), 2)
    await _write_steps(store, "sf", again, (await store.load("sf")).revision)
    await store.delete("sf")
    await _write_steps(store, "sf", again, 0)
