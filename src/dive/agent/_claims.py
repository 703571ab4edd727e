"""Session claims for multi-process use (``Durability(claim=True)``).

dive claims the session before loading it, renews every ``ttl/3`` and releases at the end
(under salvage). A failed renewal means the claim was lost: dive cancels its own run, which
ends ``canceled`` with a ``SessionClaimedError``.
"""

from __future__ import annotations

import asyncio
import os
import socket

from dive.agent._runner import IN_PROCESS, Runner
from dive.errors import SessionClaimedError
from dive.sessions import Session
from dive.turns import CancelToken

__all__ = ["ClaimKeeper", "process_owner"]

# os.urandom, not secrets: a workflow sandbox (Temporal's) refuses the secrets module even at
# import, and drawing at import keeps the draw out of every turn (no effect past the runner)
_OWNER = f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"


def process_owner() -> str:
    """The default claim owner: host, pid and a random value, one per process."""
    return _OWNER


class ClaimKeeper:
    """Holds a session claim for one run: renews it and cancels the run if it is lost."""

    def __init__(
        self,
        session: Session,
        owner: str,
        ttl: float,
        token: CancelToken,
        runner: Runner = IN_PROCESS,
    ) -> None:
        self._runner = runner
        self._session = session
        self._owner = owner
        self._ttl = ttl
        self._token = token
        self._lost: SessionClaimedError | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def lost(self) -> SessionClaimedError | None:
        """Why the claim was lost, once it was."""
        return self._lost

    async def __aenter__(self) -> ClaimKeeper:
        await self._runner.claim(self._session, self._owner, self._ttl)
        self._task = asyncio.ensure_future(self._renew())
        return self

    async def _renew(self) -> None:
        while True:
            await self._runner.sleep(self._ttl / 3)
            try:
                await self._runner.renew_claim(self._session, self._owner, self._ttl)
            except Exception as exc:
                self._lost = (
                    exc
                    if isinstance(exc, SessionClaimedError)
                    else SessionClaimedError(f"renewing the claim failed: {exc!r}")
                )
                self._token.cancel(f"the claim on session {self._session.id!r} was lost")
                return

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
        release = asyncio.ensure_future(self._runner.release_claim(self._session, self._owner))
        try:
            await asyncio.wait_for(asyncio.shield(release), timeout=30)
        except (asyncio.CancelledError, TimeoutError):
            pass
        except Exception:
            pass
