"""The viewer's parts without a browser: costs and the chart, spans, forms, waits, decisions."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from dive import Agent
from dive.agent import ToolApproval
from dive.errors import (
    NoSuspendedTurnError,
    RevisionConflictError,
    ToolCallNotPendingError,
    UserError,
)
from dive.llm import Usage, cost_of
from dive.messages import JSONValue
from dive.sessions import MemorySessionStore, SessionStore, SQLiteSessionStore
from dive.testing import ScriptedModel, tool_use
from dive.turns import PendingToolCall
from dive.viewer import pending_waits, record_decision, recorded_decisions
from dive.viewer._costs import ChartPoint, cost_chart, ideal_cost, ideal_usage, money
from dive.viewer._forms import decision_from_form, parse_form
from dive.viewer._inbox import Wait, wait_kind
from dive.viewer._trace import load_spans, record_bars, span_bars, turn_model
from tests._viewer import add, seed

# --- costs -------------------------------------------------------------------------------------


def test_ideal_caching_prices_every_input_token_as_a_cache_read() -> None:
    usage = Usage(input_tokens=40_000, cache_creation_input_tokens=10_000, output_tokens=500)
    ideal = ideal_usage(usage)
    assert (ideal.input_tokens, ideal.cache_creation_input_tokens) == (0, 0)
    assert ideal.cache_read_input_tokens == usage.total_input_tokens
    assert ideal.output_tokens == 500
    model = "anthropic:claude-sonnet-4-5"
    actual = cost_of(usage, provider="anthropic", model="claude-sonnet-4-5")
    cheaper = ideal_cost(usage, model)
    assert actual is not None
    assert cheaper is not None
    assert cheaper < actual
    assert ideal_cost(usage, None) is None
    assert ideal_cost(usage, "nobody:no-such-model") is None
    assert (money(None), money(0.0), money(0.01234)) == ("unknown", "$0", "$0.0123")


def test_the_cost_chart_is_an_accessible_svg_with_a_bar_per_turn() -> None:
    points = [
        ChartPoint(label=str(i), input_tokens=100 * i, output_tokens=10, cost=0.001 * i)
        for i in range(1, 6)
    ]
    svg = cost_chart(points)
    assert svg.startswith("<svg")
    assert 'role="img"' in svg
    assert '<title id="chart-title">Tokens and cost per turn</title>' in svg
    assert "5 turns; 1,500 input and 50 output tokens; cost $0.0150" in svg
    assert svg.count('<g class="bar">') == 5
    assert "<polyline" in svg
    unpriced = cost_chart([ChartPoint(label="1", input_tokens=1, output_tokens=1, cost=None)])
    assert "<polyline" not in unpriced
    assert cost_chart([]) == ""


# --- traces ------------------------------------------------------------------------------------


def _traced_turn(path: Path, store: SessionStore | None = None) -> Any:
    """Run a two-call turn with its spans exported to ``path`` (ConsoleSpanExporter format)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    from dive.otel import OTelTracer

    with path.open("w") as out:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
        model = ScriptedModel([tool_use(("add", {"a": 1, "b": 2})), "3"])
        agent = Agent(
            model=model,
            tools=[add],
            tracer=OTelTracer(tracer_provider=provider),
            session=store.session("traced") if store is not None else None,
        )
        result = asyncio.run(agent.run("1 + 2?"))
        provider.shutdown()
    return result


def test_spans_exported_to_a_file_give_the_turns_waterfall(tmp_path: Path) -> None:
    path = tmp_path / "spans.json"
    result = _traced_turn(path)
    path.write_text(path.read_text() + '{"name": "half a span", "cont')  # a partial write
    spans = load_spans(path)
    bars = span_bars(spans, result.turn.id)
    kinds = [(b.depth, b.kind) for b in bars]
    assert kinds == [(0, "invoke_agent"), (1, "chat"), (1, "execute_tool"), (1, "chat")]
    chat = bars[1]
    assert chat.output_tokens is not None
    assert chat.output_tokens > 0
    assert all(b.start >= 0 for b in bars)
    assert turn_model(spans, result.turn.id) == "scripted:scripted"
    assert span_bars(spans, "turn_other") == []
    assert load_spans(tmp_path / "missing.json") == []


def test_with_spans_the_pages_show_tokens_and_cost_per_model_call(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from dive.viewer import app

    store = MemorySessionStore()
    path = tmp_path / "spans.json"
    turn = _traced_turn(path, store).turn
    with TestClient(app(store, token="t", spans=path)) as c:
        page = c.get("/sessions/traced?token=t").text
        trace = c.get(f"/sessions/traced/turns/{turn.id}/trace").text
    assert len(re.findall(r"Model call \d <span class=\"muted\">[^<]* in / [^<]* out", page)) == 2
    assert "From the exported OpenTelemetry spans." in trace
    assert "execute_tool add" in trace


def test_the_record_alone_times_responses_and_the_window_tools_ran_in() -> None:
    model = ScriptedModel([tool_use(("add", {"a": 1, "b": 2})), "3"])
    turn = asyncio.run(Agent(model=model, tools=[add]).run("1 + 2?")).turn
    bars = record_bars(turn)
    assert [(b.label.split(" (")[0], b.kind) for b in bars] == [
        ("model call 1", "chat"),
        ("add", "execute_tool"),
        ("model call 2", "chat"),
    ]
    assert bars[1].state == "completed"
    assert bars[1].start == pytest.approx(bars[2].start)  # the tool ran after call 1's response
    assert "timed with the tool calls" in bars[2].label


# --- waits and forms ---------------------------------------------------------------------------


def _wait(**fields: Any) -> Wait:
    return Wait(
        session_id="s",
        turn_id="turn_x",
        revision=1,
        call=PendingToolCall(id="c1", name="tool", **fields),
        kind=wait_kind(PendingToolCall(id="c1", name="tool", **fields)),
        since=None,
    )


def test_what_a_wait_waits_for() -> None:
    form: dict[str, JSONValue] = {
        "type": "mcp_elicitation",
        "mode": "form",
        "requested_schema": {
            "type": "object",
            "properties": {"people": {"type": "integer"}, "note": {"type": "string"}},
            "required": ["people"],
        },
    }
    assert _wait(reason="approval_required").kind == "approval"
    assert _wait(metadata={"type": "ask_user", "choices": ["a"]}).kind == "ask_user"
    assert _wait(metadata=form).kind == "elicitation"
    assert _wait(metadata={"type": "mcp_elicitation", "mode": "url", "url": "https://x"}).kind == (
        "auth"
    )
    assert _wait(reason="auth_required").kind == "auth"
    assert _wait().kind == "input"
    assert _wait(metadata=form).fields == [("people", "integer", True), ("note", "string", False)]
    assert _wait(prompt="").prompt == "Answer for tool?"


def test_decisions_from_posted_forms() -> None:
    form = {
        "type": "mcp_elicitation",
        "requested_schema": {
            "type": "object",
            "properties": {"people": {"type": "integer"}, "note": {"type": "string"}},
            "required": ["people"],
        },
    }
    elicit = _wait(metadata=form)
    assert decision_from_form(elicit, {"action": "answer", "field.people": "4"}) == {"people": 4}
    with pytest.raises(UserError, match="people is required"):
        decision_from_form(elicit, {"action": "answer"})
    with pytest.raises(UserError, match="must be a integer"):
        decision_from_form(elicit, {"action": "answer", "field.people": "four"})
    approval = _wait(reason="approval_required")
    assert decision_from_form(approval, {"action": "approve", "for_session": "on"}) == (
        ToolApproval(approved=True, for_session=True)
    )
    assert decision_from_form(approval, {"action": "deny", "message": "not now"}) == (
        ToolApproval(approved=False, message="not now")
    )
    with pytest.raises(UserError, match="use Approve or Deny"):
        decision_from_form(approval, {"action": "answer", "answer": "yes"})
    free = _wait()
    assert decision_from_form(free, {"action": "answer", "answer": '{"a": 1}'}) == {"a": 1}
    assert decision_from_form(free, {"action": "answer", "answer": " words "}) == "words"
    assert decision_from_form(_wait(reason="auth_required"), {"action": "answer"}) == "done"
    with pytest.raises(UserError, match="unknown action"):
        decision_from_form(free, {"action": "launch"})
    assert parse_form(b"a=1&b=x+y&b=z&empty=") == {"a": "1", "b": "z", "empty": ""}


# --- decisions without an agent, over each backend ---------------------------------------------


async def _check_recording(store: SessionStore) -> None:
    await seed(store)
    waits = await pending_waits(store)
    assert sorted(w.session_id for w in waits) == ["asking", "mixed", "waiting"]
    wait = next(w for w in waits if w.session_id == "waiting")
    with pytest.raises(RevisionConflictError, match="not the open turn"):
        await record_decision(store, "waiting", turn_id="turn_0", call_id=wait.call.id, value="x")
    with pytest.raises(ToolCallNotPendingError):
        await record_decision(store, "waiting", turn_id=wait.turn_id, call_id="nope", value="x")
    with pytest.raises(NoSuspendedTurnError):
        await record_decision(store, "done", turn_id=wait.turn_id, call_id="c", value="x")
    approve = ToolApproval(approved=True)
    assert await record_decision(
        store, "waiting", turn_id=wait.turn_id, call_id=wait.call.id, value=approve
    )
    assert not await record_decision(
        store, "waiting", turn_id=wait.turn_id, call_id=wait.call.id, value=approve
    )
    snap = await store.load("waiting")
    assert recorded_decisions(snap.open_turn) == {wait.call.id: approve}
    [again] = await pending_waits(store, session_id="waiting")
    assert again.recorded is not None


def test_decisions_are_recorded_in_memory() -> None:
    asyncio.run(_check_recording(MemorySessionStore()))


def test_decisions_are_recorded_in_sqlite(tmp_path: Path) -> None:
    async def run() -> None:
        store = SQLiteSessionStore(tmp_path / "s.db")
        try:
            await _check_recording(store)
        finally:
            await store.close()

    asyncio.run(run())


async def test_decisions_are_recorded_in_postgres(pg_store: Any) -> None:
    await _check_recording(pg_store)


def test_a_page_names_its_turns_by_id(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from dive.viewer import app

    store = MemorySessionStore()
    asyncio.run(seed(store))
    with TestClient(app(store, token="t", model="anthropic:claude-sonnet-4-5")) as c:
        html = c.get("/sessions/mixed?token=t").text
    ids = re.findall(r'<li class="turn [^"]+" id="(turn_[0-9a-f]{32})"', html)
    assert ids == [t.id for t in asyncio.run(store.turns("mixed"))]
    assert "with ideal caching" in html


def test_the_readme_shows_the_committed_screenshot() -> None:
    root = Path(__file__).resolve().parent.parent
    assert "](docs/images/viewer.png)" in (root / "README.md").read_text()
    assert (root / "docs" / "images" / "viewer.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compactions_and_subagent_turns_are_linked() -> None:
    from dataclasses import replace

    from starlette.testclient import TestClient

    from dive.compaction import compact_session
    from dive.turns import TurnOrigin
    from dive.viewer import app

    store = MemorySessionStore()

    async def build() -> tuple[str, str]:
        await seed(store)
        for text in ("one more", "and another"):
            await Agent(model=ScriptedModel(["ok " * 50]), session=store.session("done")).run(text)
        summary = ScriptedModel(["They added 2 and 3."])
        compacted = await compact_session(
            store.session("done"), summary, keep_recent_tokens=1, keep_first=False
        )
        assert compacted.changed
        parent = (await store.turns("done"))[0]
        call_id = parent.tool_calls[0].id
        child = (await store.turns("mixed"))[0]
        origin = TurnOrigin(parent_turn_id=parent.id, parent_tool_call_id=call_id)
        await store.checkpoint(
            f"{parent.id}.{call_id}", replace(child, origin=origin), expected_revision=0
        )
        return parent.id, f"{parent.id}.{call_id}"

    parent_id, child_id = asyncio.run(build())
    with TestClient(app(store, token="t")) as c:
        done = c.get("/sessions/done?token=t").text
        assert "Compacted: earlier turns are summarised" in done
        assert "They added 2 and 3." in done
        assert f'href="/sessions/{child_id}">Subagent session</a>' in done
        sub = c.get(f"/sessions/{child_id}").text
        assert f'subagent of <a href="/turns/{parent_id}">' in sub
        found = c.get(f"/turns/{parent_id}", follow_redirects=False)
        assert found.status_code == 303
        assert found.headers["location"] == f"/sessions/done#{parent_id}"
