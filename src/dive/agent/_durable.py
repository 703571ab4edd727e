"""Durability: step checkpoints and session claims.

**Step checkpoints** (``Durability(checkpoint_steps=True)``, with a session) write the turn as
``running`` before the first model call, after each model response whose calls will run, as
calls start (one write per parallel launch) and as each result arrives; then the final status.
Each write is one store write bounded by ``save_timeout``. A failed step checkpoint stops the
turn *before* that step (reason ``error``), so a tool never runs unrecorded.

**Claims** (``Durability(claim=True)``): dive claims the session before loading it, renews
every ``ttl/3`` and releases at the end (under salvage). A failed renewal means the claim was
lost: dive cancels its own run, which ends ``canceled`` with a ``SessionClaimedError``.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from dive.agent._records import Turn
from dive.errors import DiveError, SessionClaimedError

if TYPE_CHECKING:
    from dive.agent._cancel import CancelToken
    from dive.agent._run import TurnRun
    from dive.sessions import Session

__all__ = ["ClaimKeeper", "StepCheckpointError", "checkpoint_step", "process_owner", "running_turn"]

_OWNER = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def process_owner() -> str:
    """The default claim owner: host, pid and a random value, one per process."""
    return _OWNER


class StepCheckpointError(DiveError):
    """A step checkpoint failed; the step it guarded did not run."""


def running_turn(run: TurnRun) -> Turn:
    """The ``running`` record of the turn as it stands (results of the batch in flight too)."""
    messages = list(run.record)
    batch = run.batch
    if batch is not None:
        messages.extend(batch.messages())
    return Turn(
        id=run.turn_id,
        status="running",
        origin=run.origin,
        messages=tuple(messages),
        tool_calls=run.call_records(),
        usage=run.turn_usage,
        created_at=run.created_at,
        model_calls=run.model_calls,
        executed_tool_calls=run.executed_tool_calls,
    )


async def checkpoint_step(run: TurnRun, what: str) -> None:
    """Write a ``running`` checkpoint; raise ``StepCheckpointError`` if it failed."""
    session = run.session
    if session is None or not run.agent.durability.checkpoint_steps:
        return
    turn = running_turn(run)
    limit = run.agent.incomplete_turns.save_timeout
    try:
        async with asyncio.timeout(limit):
            revision = await asyncio.shield(
                session.checkpoint(turn, expected_revision=run.loaded_revision)
            )
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise StepCheckpointError(
            f"step checkpoint before {what} failed ({exc!r}); the step did not run"
        ) from exc
    run.loaded_revision = revision
    run.checkpoints += 1


class ClaimKeeper:
    """Holds a session claim for one run: renews it and cancels the run if it is lost."""

    def __init__(self, session: Session, owner: str, ttl: float, token: CancelToken) -> None:
        self.session = session
        self.owner = owner
        self.ttl = ttl
        self.token = token
        self.lost: SessionClaimedError | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ClaimKeeper:
        await self.session.claim(self.owner, self.ttl)
        self._task = asyncio.ensure_future(self._renew())
        return self

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                await self.session.renew_claim(self.owner, self.ttl)
            except Exception as exc:
                self.lost = (
                    exc
                    if isinstance(exc, SessionClaimedError)
                    else SessionClaimedError(f"renewing the claim failed: {exc!r}")
                )
                self.token.cancel(f"the claim on session {self.session.id!r} was lost")
                return

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
        release = asyncio.ensure_future(self.session.release_claim(self.owner))
        try:
            await asyncio.wait_for(asyncio.shield(release), timeout=30)
        except (asyncio.CancelledError, TimeoutError):
            pass
        except Exception:
            pass


def stamp_finished(turn: Turn) -> Turn:
    """``turn`` with ``finished_at`` set now."""
    return replace(turn, finished_at=datetime.now(UTC))
