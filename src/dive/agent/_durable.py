"""Step checkpoints (``Durability(checkpoint_steps=True)``, with a session).

The turn is written as ``running`` before the first model call, after each model response
whose calls will run, as calls start (one write per parallel launch) and as each result
arrives; then the final status. Each write is one store write bounded by ``save_timeout``.
A failed step checkpoint stops the turn *before* that step (reason ``error``), so a tool
never runs unrecorded.
"""

from __future__ import annotations

import asyncio

from dive.agent._eager import start
from dive.agent._run import Run
from dive.errors import StepCheckpointError

__all__ = ["checkpoint_step"]


async def checkpoint_step(run: Run, what: str) -> None:
    """Write a ``running`` checkpoint; raise ``StepCheckpointError`` if it failed."""
    setup = run.setup
    session = setup.session
    if session is None or not setup.durable:
        return
    state = run.state
    turn = state.running_turn()
    limit = run.config.incomplete_turns.save_timeout
    write = start(run.runner.write(session, turn, expected_revision=state.revision))
    if write.done():  # the usual case: written without waiting (no task, no timer)
        exc = write.exception()
        if exc is not None:
            raise _failed(what, exc) from exc
        state.saved(write.result())
        return
    try:
        async with asyncio.timeout(limit):
            revision = await asyncio.shield(write)
    except asyncio.CancelledError:
        await _salvage(run, write, limit)
        raise
    except Exception as exc:
        raise _failed(what, exc) from exc
    state.saved(revision)


def _failed(what: str, exc: BaseException) -> StepCheckpointError:
    return StepCheckpointError(
        f"step checkpoint before {what} failed ({exc!r}); the step did not run"
    )


async def _salvage(run: Run, write: asyncio.Future[int], limit: float) -> None:
    """The run was cancelled mid-write: the write may still land, so learn its revision.

    Otherwise the final write would expect a stale revision and be refused.
    """
    done, _ = await asyncio.wait({write}, timeout=limit)
    if done and not write.cancelled() and write.exception() is None:
        run.state.saved(write.result())
