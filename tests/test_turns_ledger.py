"""The call ledger: its transition table, checked by random transition sequences."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dive.messages import ToolCall, ToolDefinition
from dive.turns import PendingToolCall, SuspensionState
from dive.turns._engine import PHASE_STATE, TRANSITIONS, CallLedger, LedgerError, Phase, Transition

TRANSITION_NAMES: list[Transition] = list(TRANSITIONS)
STARTED: frozenset[Phase] = frozenset({"running", "suspended"})


def _reachable_from(start: Phase) -> set[Phase]:
    seen: set[Phase] = {start}
    todo: list[Phase] = [start]
    while todo:
        phase = todo.pop()
        for table in TRANSITIONS.values():
            nxt = table.get(phase)
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_no_path_leads_from_a_started_call_to_not_started() -> None:
    for phase in STARTED:
        reachable = _reachable_from(phase)
        assert "not_started" not in reachable, phase
        assert all(PHASE_STATE[p] != "not_started" for p in reachable)


def test_close_settles_every_phase_to_a_final_state() -> None:
    close = TRANSITIONS["close"]
    assert set(close) == set(PHASE_STATE)
    assert {PHASE_STATE[p] for p in close.values()} <= {"not_started", "completed", "unknown"}


def _apply(ledger: CallLedger, call_id: str, name: Transition) -> None:
    if name == "hold":
        ledger.hold(call_id, PendingToolCall(id=call_id, name="t", started=False))
    elif name == "suspend":
        ledger.hold(call_id, PendingToolCall(id=call_id, name="t", started=True))
    else:
        ledger.apply(call_id, name)


@settings(max_examples=400)
@given(st.lists(st.sampled_from(TRANSITION_NAMES), max_size=25))
def test_random_sequences_follow_the_table(sequence: list[Transition]) -> None:
    ledger = CallLedger()
    ledger.announce(ToolCall(id="c", name="t"), None)
    phase: Phase = "not_started"
    started = False
    for name in sequence:
        expected = TRANSITIONS[name].get(phase)
        if expected is None:
            with pytest.raises(LedgerError):
                _apply(ledger, "c", name)
            assert ledger.phase("c") == phase  # an illegal transition changes nothing
            continue
        _apply(ledger, "c", name)
        phase = expected
        assert ledger.phase("c") == phase
        started = started or phase in STARTED
        if started:
            assert ledger.state("c") != "not_started"
    ledger.close()
    final = ledger.records()[0].state
    if started:
        assert final in ("completed", "unknown")
    assert final in ("not_started", "completed", "unknown")


def test_announcing_a_call_twice_is_a_bug() -> None:
    ledger = CallLedger()
    ledger.announce(ToolCall(id="c", name="t"), None)
    with pytest.raises(LedgerError, match="announced twice"):
        ledger.announce(ToolCall(id="c", name="t"), None)
    with pytest.raises(LedgerError, match="never announced"):
        ledger.start("other")


def test_records_carry_governance_and_reconcile() -> None:
    ledger = CallLedger()
    ledger.announce(
        ToolCall(id="r", name="read"), ToolDefinition(name="read", effect_type="read_only")
    )
    ledger.announce(
        ToolCall(id="w", name="write"), ToolDefinition(name="write", tags=frozenset({"fs"}))
    )
    for cid in ("r", "w"):
        ledger.start(cid)
    ledger.close()
    read, write = ledger.records()
    assert (read.state, read.reconcile, read.effect) == ("unknown", False, "read_only")
    assert (write.state, write.reconcile, write.tags) == ("unknown", True, ("fs",))
    assert ledger.executed == 2


def test_restore_tells_suspended_from_held_calls() -> None:
    ledger = CallLedger()
    ledger.announce(ToolCall(id="s", name="t"), None)
    ledger.announce(ToolCall(id="h", name="t"), None)
    ledger.start("s")
    ledger.hold("s", PendingToolCall(id="s", name="t", started=True))
    ledger.hold("h", PendingToolCall(id="h", name="t", started=False))
    records = ledger.records()
    assert [r.state for r in records] == ["waiting", "waiting"]
    state = SuspensionState(
        turn_id="turn_x",
        pending_tool_calls=(ledger.pending("s"), ledger.pending("h")),  # type: ignore[arg-type]
    )
    restored = CallLedger.restore(records, suspension=state, executed=1)
    assert restored.phase("s") == "suspended"
    assert restored.phase("h") == "held"
    restored.close()
    assert [r.state for r in restored.records()] == ["unknown", "not_started"]
    assert restored.executed == 1
