"""Workers in child processes against the real dev server: a worker SIGKILLed during a
non-idempotent call (never run again, the turn ends with ``reconcile``) or an idempotent one
(retried on the second worker, completed), and 20 turns at once on two workers."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

from tests._temporal import Env, WorkerProcess, environment


@contextmanager
def workers(env: Env, *blocks: str | None) -> Generator[list[WorkerProcess]]:
    started = [WorkerProcess(env, block=b) for b in blocks]
    try:
        yield started
    finally:
        for w in started:
            w.stop()


async def test_a_worker_killed_during_a_non_idempotent_call_never_reruns_it(tmp_path: Path) -> None:
    async with environment(tmp_path, in_process_worker=False) as env:
        with workers(env, "charge") as (first,):
            await first.ready()
            handle = await env.agent.start(
                "plan: charge:o1", client=env.client, task_queue=env.queue
            )
            await env.wait_for_effect("charge o1")
            first.kill()
            with workers(env, None) as (second,):
                await second.ready()
                result = await handle.result()
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.next == "reconcile"
    assert [(r.name, r.state, r.reconcile) for r in result.turn.tool_calls] == [
        ("charge", "unknown", True)
    ]
    assert env.effect_lines() == [f"charge o1 {first.pid}"]  # started once, on the lost worker


async def test_a_worker_killed_during_an_idempotent_call_is_retried_on_another(
    tmp_path: Path,
) -> None:
    async with environment(tmp_path, in_process_worker=False) as env:
        with workers(env, "fetch") as (first,):
            await first.ready()
            handle = await env.agent.start(
                "plan: lookup:1; fetch:r1; lookup:2", client=env.client, task_queue=env.queue
            )
            await env.wait_for_effect("fetch r1")
            first.kill()
            with workers(env, None) as (second,):
                await second.ready()
                result = await handle.result()
    assert result.status == "completed"
    assert result.output == "done: v1, fetched r1, v2"
    assert [r.state for r in result.turn.tool_calls] == ["completed"] * 3
    effects = env.effect_lines()
    assert effects == [
        f"lookup 1 {first.pid}",
        f"fetch r1 {first.pid}",
        f"fetch r1 {second.pid}",
        f"lookup 2 {second.pid}",
    ]


async def test_twenty_turns_at_once_on_two_workers(tmp_path: Path) -> None:
    async with environment(tmp_path, in_process_worker=False) as env:
        with workers(env, None, None) as pair:
            await asyncio.gather(*(w.ready() for w in pair))
            tag = uuid.uuid4().hex[:6]
            handles = await asyncio.gather(
                *(
                    env.agent.start(
                        f"plan: lookup:{k}a, lookup:{k}b; lookup:{k}c",
                        client=env.client,
                        task_queue=env.queue,
                        session_id=f"many-{tag}-{k}",
                    )
                    for k in range(20)
                )
            )
            results = await asyncio.gather(*(h.result() for h in handles))
    assert [r.output for r in results] == [f"done: v{k}a, v{k}b, v{k}c" for k in range(20)]
    by_worker = Counter(line.split()[2] for line in env.effect_lines())
    assert sum(by_worker.values()) == 60  # every call ran exactly once
    assert set(by_worker) == {str(w.pid) for w in pair}  # both workers did work


async def test_a_worker_killed_during_a_model_call_is_retried_on_another(tmp_path: Path) -> None:
    async with environment(tmp_path, in_process_worker=False) as env:
        with workers(env, "model") as (first,):
            await first.ready()
            handle = await env.agent.start(
                "plan: lookup:9", client=env.client, task_queue=env.queue
            )
            await env.wait_for_effect("model")
            first.kill()
            with workers(env, None) as (second,):
                await second.ready()
                result = await handle.result()
    assert result.status == "completed"
    assert result.output == "done: v9"
    assert result.turn.model_calls == 2  # the lost call is not counted twice
    assert env.effect_lines() == [f"model 1 {first.pid}", f"lookup 9 {second.pid}"]
