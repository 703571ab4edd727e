"""Temporal history: by reference, a turn's history grows by the same bytes per step at step
200 as at step 1 (measured), and recorded histories replay deterministically (``Replayer``):
the ones committed under ``tests/fixtures/temporal`` (so a change that breaks determinism of
workflows already running fails), and ones recorded now.

Regenerate the committed histories with ``DIVE_RECORD_TEMPORAL_HISTORIES=1`` (only when a
change is meant to be incompatible, which strands running workflows)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from dive.temporal import DATA_CONVERTER
from dive.temporal._agent import SANDBOX
from dive.temporal._registry import register
from dive.temporal._workflow import DiveTurnWorkflow
from tests._temporal import Env, environment
from tests.temporal_app import temporal_agent

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "temporal"
SCENARIOS = ("tool_loop", "suspend_resume", "hard_cancel")


async def _history(env: Env, workflow_id: str) -> WorkflowHistory:
    return await env.client.get_workflow_handle(workflow_id).fetch_history()


async def _scenario(env: Env, name: str) -> str:
    """Run one recorded scenario; the id of its workflow."""
    client, queue = env.client, env.queue
    if name == "tool_loop":
        handle = await env.agent.start(
            "plan: lookup:1, fetch:2; charge:3", client=client, task_queue=queue
        )
        await handle.result()
    elif name == "suspend_resume":
        handle = await env.agent.start("plan: ask:x", client=client, task_queue=queue)
        await handle.result()
        await handle.resume(tool_results={"c0_0": "yes"})
        await handle.result()
    else:
        handle = await env.agent.start("plan: slow:60", client=client, task_queue=queue)
        await env.wait_for_effect("slow")
        await handle.cancel(soft=False)
        await handle.result()
    return handle.workflow_id


def _replayer() -> Replayer:
    register("tester", temporal_agent(store=None))  # type: ignore[arg-type]  # replay runs no activity
    return Replayer(
        workflows=[DiveTurnWorkflow],
        data_converter=DATA_CONVERTER,
        workflow_runner=SandboxedWorkflowRunner(restrictions=SANDBOX),
    )


@pytest.mark.parametrize("name", SCENARIOS)
async def test_committed_histories_replay(name: str) -> None:
    path = FIXTURES / f"{name}.json"
    history = WorkflowHistory.from_json(name, path.read_text())
    await _replayer().replay_workflow(history)


async def test_histories_recorded_now_replay(tmp_path: Path) -> None:
    recorded: dict[str, WorkflowHistory] = {}
    async with environment(tmp_path) as env:
        for name in SCENARIOS:
            recorded[name] = await _history(env, await _scenario(env, name))
    if os.environ.get("DIVE_RECORD_TEMPORAL_HISTORIES"):
        for name, history in recorded.items():
            (FIXTURES / f"{name}.json").write_text(history.to_json())
    replayer = _replayer()
    for history in recorded.values():
        await replayer.replay_workflow(history)


def _bytes_per_step(history: WorkflowHistory, model_activity: str) -> list[int]:
    """History bytes from each model call's scheduling to the next one's."""
    steps: list[int] = []
    for event in history.events:
        scheduled = event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        if (
            scheduled
            and event.activity_task_scheduled_event_attributes.activity_type.name == model_activity
        ):
            steps.append(0)
        if steps:
            steps[-1] += event.ByteSize()
    return steps


async def test_a_200_step_turn_grows_its_history_by_the_same_bytes_per_step(tmp_path: Path) -> None:
    async with environment(tmp_path) as env:
        handle = await env.agent.start("loop: lookup 200", client=env.client, task_queue=env.queue)
        result = await handle.result()
        history = await _history(env, handle.workflow_id)
    assert result.status == "completed"
    assert result.turn.executed_tool_calls == 200
    steps = _bytes_per_step(history, env.agent.names.model)[:-1]  # the last answers, no tool
    assert len(steps) == 200
    first, last = sum(steps[:50]) / 50, sum(steps[-50:]) / 50
    print(f"history bytes per step: first 50 {first:.0f}, last 50 {last:.0f}")
    assert last <= first * 1.15  # flat: nothing in a step's events grows with the turn


async def test_the_workflow_and_dive_import_under_the_full_sandbox(tmp_path: Path) -> None:
    """Workers validate the workflow by importing its module in the sandbox; with Temporal's
    default restrictions (dive not passed through) every dive module it needs is imported
    there afresh, so no dive module may draw a random value or read a clock at import."""
    async with environment(tmp_path, in_process_worker=False) as env:
        strict = SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default)
        worker = env.agent.worker(env.client, task_queue=env.queue, workflow_runner=strict)
        assert worker.task_queue == env.queue
