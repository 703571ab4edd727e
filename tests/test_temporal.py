"""dive.temporal against the real dev server, with a worker in this process: a tool loop
and its equality with ``agent.run``, suspend and resume (through the handle, and through a
plain ``agent.run(tool_results=...)`` in another process), soft and hard cancel, live text,
the start guards, and the stable names."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import BaseModel
from temporalio.client import Client

from dive.agent import Agent
from dive.errors import ConflictingToolResultError, DiveError, UserError
from dive.messages import Message, TextBlock, ToolResult
from dive.sessions import MemorySessionStore
from dive.temporal import TemporalAgent, TextChunk
from dive.temporal._names import names_for
from dive.testing import ScriptedModel, call, tool_use
from dive.tools import ToolContext, tool
from tests._mcp import stdio_server
from tests._temporal import ROOT, environment, temporal_address
from tests.temporal_app import Brain, build_agent


def _sid(name: str) -> str:
    """A session id no other test run uses (workflow ids are the server's, not the test's)."""
    return f"{name}-{uuid.uuid4().hex[:12]}"


def _shape(messages: Sequence[Message]) -> list[tuple[str, object]]:
    return [(m.role, m.content) for m in messages]


async def test_a_tool_loop_completes_and_matches_agent_run(tmp_path: Path) -> None:
    prompt = "plan: lookup:1, lookup:2; charge:x"
    async with environment(tmp_path) as env:
        sid = _sid("loop")
        result = await env.agent.run(
            prompt, client=env.client, task_queue=env.queue, session_id=sid
        )
        stored = await env.store.session(sid).turns()
    plain = await build_agent().run(prompt, session=MemorySessionStore().session("s1"))
    assert result.status == plain.status == "completed"
    assert result.output == plain.output == "done: v1, v2, charged x"
    assert _shape(result.turn.messages) == _shape(plain.turn.messages)
    assert result.turn.tool_calls == plain.turn.tool_calls
    assert result.usage == plain.usage
    assert (result.turn.model_calls, result.turn.executed_tool_calls) == (3, 3)
    assert [t.id for t in stored] == [result.turn.id]
    assert stored[0] == result.turn
    pid = os.getpid()
    assert sorted(env.effect_lines()) == [f"charge x {pid}", f"lookup 1 {pid}", f"lookup 2 {pid}"]


async def test_a_second_turn_reads_the_history_from_the_store(tmp_path: Path) -> None:
    async with environment(tmp_path) as env:
        sid = _sid("two")
        first = await env.agent.run(
            "plan: lookup:1", client=env.client, task_queue=env.queue, session_id=sid
        )
        second = await env.agent.run(
            "plan: lookup:2", client=env.client, task_queue=env.queue, session_id=sid
        )
    assert (first.status, second.status) == ("completed", "completed")
    assert second.output == "done: v2"
    assert second.history == tuple(first.turn.messages)
    assert second.all_messages() == [*first.turn.messages, *second.turn.messages]


async def test_suspend_then_resume_through_the_handle(tmp_path: Path) -> None:
    async with environment(tmp_path) as env:
        handle = await env.agent.start("plan: ask:colour", client=env.client, task_queue=env.queue)
        suspended = await handle.result()
        assert suspended.status == "suspended"
        pending = suspended.turn.suspension.pending_tool_calls  # type: ignore[union-attr]
        assert [(p.id, p.prompt) for p in pending] == [("c0_0", "please answer: colour")]
        live = await handle.turn()
        assert live is not None
        assert live.status == "suspended"
        assert await handle.resume(tool_results={"c0_0": "blue"}) is None
        assert await handle.resume(tool_results={"c0_0": "blue"}) is None  # the same again
        done = await handle.result()
        assert done.status == "completed"
        assert done.output == "done: blue"
        assert done.turn.id == suspended.turn.id
        with pytest.raises(DiveError):
            await handle.resume(tool_results={"c0_0": "red"})


async def test_a_conflicting_resume_is_refused_and_the_turn_still_waits(tmp_path: Path) -> None:
    async with environment(tmp_path) as env:
        handle = await env.agent.start(
            "plan: ask:a, ask:b", client=env.client, task_queue=env.queue
        )
        assert (await handle.result()).status == "suspended"
        await handle.resume(tool_results={"c0_0": "one"})  # a partial resume
        partial = await handle.result()
        assert partial.status == "suspended"
        with pytest.raises(ConflictingToolResultError):
            await handle.resume(tool_results={"c0_0": "two"})
        await handle.resume(tool_results={"c0_1": "three"})
        done = await handle.result()
        assert done.output == "done: one, three"


async def test_resume_through_a_plain_agent_run_in_another_process(tmp_path: Path) -> None:
    async with environment(tmp_path) as env:
        sid = _sid("elsewhere")
        handle = await env.agent.start(
            "plan: ask:colour", client=env.client, task_queue=env.queue, session_id=sid
        )
        suspended = await handle.result()
        assert suspended.status == "suspended"
        child = await asyncio.to_thread(
            subprocess.run,
            [
                sys.executable,
                "-m",
                "tests.temporal_app",
                "resume",
                str(env.db),
                sid,
                "c0_0",
                "green",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert child.stdout.strip() == "RESUMED completed done: green", child.stderr
        turns = await env.store.session(sid).turns()
        assert [t.status for t in turns] == ["completed"]
        await handle.cancel(soft=False)  # the waiting workflow learns the turn moved on
        settled = await handle.result()
        assert settled.status == "completed"
        assert settled.output_text == "done: green"


async def test_soft_cancel_lets_the_running_call_finish_and_stops(tmp_path: Path) -> None:
    async with environment(tmp_path) as env:
        handle = await env.agent.start(
            "plan: slow:1.5; lookup:1", client=env.client, task_queue=env.queue
        )
        await env.wait_for_effect("slow")
        await handle.cancel(soft=True)
        result = await handle.result()
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "canceled"
    assert [(r.name, r.state) for r in result.turn.tool_calls] == [("slow", "completed")]
    assert not [line for line in env.effect_lines() if line.startswith("lookup")]


async def test_hard_cancel_stops_the_running_call_and_records_it_unknown(tmp_path: Path) -> None:
    async with environment(tmp_path) as env:
        handle = await env.agent.start("plan: slow:60", client=env.client, task_queue=env.queue)
        await env.wait_for_effect("slow")
        await handle.cancel(soft=False)
        result = await handle.result()
        stored = (await env.store.session(handle.session_id).turns())[-1]
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "canceled"
    assert [(r.name, r.state) for r in result.turn.tool_calls] == [("slow", "unknown")]
    assert stored == result.turn


async def test_soft_cancel_closes_a_suspended_turn(tmp_path: Path) -> None:
    async with environment(tmp_path) as env:
        handle = await env.agent.start("plan: ask:x", client=env.client, task_queue=env.queue)
        assert (await handle.result()).status == "suspended"
        await handle.cancel(soft=True)
        result = await handle.result()
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "canceled"


async def test_live_text_reaches_the_caller(tmp_path: Path) -> None:
    async with environment(tmp_path) as env:
        handle = await env.agent.start(
            "plan: lookup:7", client=env.client, task_queue=env.queue, live_text=True
        )
        chunks: list[TextChunk] = [c async for c in handle.text(poll_interval=0.05)]
        result = await handle.result()
    assert "".join(c.text for c in chunks) == result.output_text == "done: v7"
    assert {(c.step, c.attempt) for c in chunks} == {(2, 1)}


async def test_start_refuses_an_oversized_prompt_and_unserialisable_deps(tmp_path: Path) -> None:
    async with environment(tmp_path, in_process_worker=False) as env:
        with pytest.raises(UserError, match="over the 2,097,152-byte Temporal payload limit"):
            await env.agent.start("x" * 3_000_000, client=env.client, task_queue=env.queue)
        with pytest.raises(UserError, match="cannot be serialised"):
            await env.agent.start("hi", client=env.client, task_queue=env.queue, deps=object())  # type: ignore[arg-type]
        plain = await Client.connect(temporal_address())
        with pytest.raises(UserError, match=r"dive\.temporal\.connect"):
            await env.agent.start("hi", client=plain, task_queue=env.queue)
        with pytest.raises(UserError, match="invalid TemporalAgent name"):
            type(env.agent)(build_agent(), name="no spaces", store=env.store)


async def test_a_second_turn_of_a_busy_session_is_refused(tmp_path: Path) -> None:
    async with environment(tmp_path) as env:
        sid = _sid("busy")
        handle = await env.agent.start(
            "plan: ask:x", client=env.client, task_queue=env.queue, session_id=sid
        )
        await handle.result()
        with pytest.raises(UserError, match="already has a turn running"):
            await env.agent.start(
                "plan: lookup:1", client=env.client, task_queue=env.queue, session_id=sid
            )
        await handle.cancel(soft=False)
        await handle.result()


def test_the_names_are_stable_compatibility_data() -> None:
    names = names_for("billing-bot")
    assert (names.workflow, names.model, names.tool, names.toolset, names.store) == (
        "dive.billing-bot.turn",
        "dive.billing-bot.model",
        "dive.billing-bot.tool",
        "dive.billing-bot.toolset",
        "dive.billing-bot.store",
    )
    assert names.workflow_id("s_1") == "dive.billing-bot.turn:s_1"


def test_the_example_runs(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "temporal_agent.py")],
        env={**os.environ, "TEMPORAL_ADDRESS": temporal_address()},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "turn 2: suspended - refund waits for approval_required" in proc.stdout
    assert "turn 2: completed - Done: 42.50 refunded on A-17." in proc.stdout
    assert "stored turns: ['completed', 'completed']" in proc.stdout


async def test_toolsets_list_and_call_through_activities_and_timeouts_are_unknown(
    tmp_path: Path,
) -> None:
    prompt = "plan: price:abc; stall:1"
    async with environment(tmp_path) as env:
        handle = await env.agent.start(prompt, client=env.client, task_queue=env.queue)
        result = await handle.result()
        history = await env.client.get_workflow_handle(handle.workflow_id).fetch_history()
    plain = await build_agent().run(prompt, session=MemorySessionStore().session("s"))
    assert result.output == plain.output == 'done: $3.00, Tool "stall" timed out after 0.3 s.'
    assert [(r.name, r.state) for r in result.turn.tool_calls] == [
        ("price", "completed"),
        ("stall", "unknown"),
    ]
    assert result.turn.tool_calls == plain.turn.tool_calls
    kinds = {
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    }
    assert kinds == {"dive.tester.model", "dive.tester.tool", "dive.tester.toolset"}


async def test_a_tool_result_over_the_payload_limit_is_an_error_the_model_sees(
    tmp_path: Path,
) -> None:
    async with environment(tmp_path, in_process_worker=False) as env:
        small = TemporalAgent(
            build_agent(), name="tester-small", store=env.store, max_payload_bytes=8192
        )
        async with small.worker(env.client, task_queue=env.queue):
            result = await small.run("plan: big:64", client=env.client, task_queue=env.queue)
    assert result.status == "completed"
    assert "returned" in result.output
    assert "over the 8,192-byte Temporal payload limit" in result.output


async def test_a_waiting_turn_continues_as_new_and_resumes(tmp_path: Path) -> None:
    async with environment(tmp_path, in_process_worker=False) as env:
        short = TemporalAgent(
            build_agent(), name="tester-short", store=env.store, max_history_events=10
        )
        async with short.worker(env.client, task_queue=env.queue):
            handle = await short.start(
                "plan: ask:a; ask:b", client=env.client, task_queue=env.queue
            )
            first = await handle.result()
            await handle.resume(tool_results={"c0_0": "one"})
            second = await handle.result()
            await handle.resume(tool_results={"c1_0": "two"})
            done = await handle.result()
    assert (first.status, second.status, done.status) == ("suspended", "suspended", "completed")
    assert done.output == "done: one, two"
    runs = [w async for w in env.client.list_workflows(f'WorkflowId = "{handle.workflow_id}"')]
    assert len(runs) >= 2  # it continued as new while it waited


async def test_an_mcp_server_lists_and_calls_on_the_worker(tmp_path: Path) -> None:
    server = stdio_server()
    agent = Agent(model=Brain(), toolsets=[server], name="mcp-tester")
    async with environment(tmp_path, in_process_worker=False) as env:
        remote = TemporalAgent(agent, name="tester-mcp", store=env.store)
        try:
            async with remote.worker(env.client, task_queue=env.queue):
                result = await remote.run(
                    "plan: mcp__fx__echo:text=over MCP", client=env.client, task_queue=env.queue
                )
        finally:
            await server.aclose()
    assert result.status == "completed"
    assert result.output == "done: over MCP"
    assert [(r.name, r.state, r.origin) for r in result.turn.tool_calls] == [
        ("mcp__fx__echo", "completed", "mcp:fx")
    ]


class Refund(BaseModel):
    order: str
    amount: float


@dataclass(frozen=True)
class Shop:
    currency: str


@tool
def quote(ctx: ToolContext[Shop], order: str) -> str:
    """Quote a refund in the shop's currency (deps travel to the worker)."""
    return f"{order}: 12.50 {ctx.deps.currency}"


async def test_typed_output_and_deps_cross_temporal(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_use(call("quote", {"order": "A-1"})),
            tool_use(call("submit_result", {"order": "A-1", "amount": 12.5})),
        ]
    )
    agent = Agent(model=model, tools=[quote], output_type=Refund, deps_type=Shop)
    async with environment(tmp_path, in_process_worker=False) as env:
        typed = TemporalAgent(agent, name="tester-typed", store=env.store)
        async with typed.worker(env.client, task_queue=env.queue):
            result = await typed.run(
                "Refund A-1", client=env.client, task_queue=env.queue, deps=Shop(currency="EUR")
            )
    assert result.status == "completed"
    assert result.output == Refund(order="A-1", amount=12.5)
    texts = [
        part.text
        for m in result.turn.messages
        for block in m.content
        if isinstance(block, ToolResult)
        for part in block.content
        if isinstance(part, TextBlock)
    ]
    assert texts[0] == "A-1: 12.50 EUR"  # the deps reached the tool on the worker
