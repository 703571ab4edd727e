"""Live updates: server-sent events when a session (or any session) changes.

A page subscribes to ``/events`` (``?session=ID`` for one session). The stream compares a
fingerprint (the session's revision, or every listed session's revision, plus what this
viewer is running) every ``poll_interval`` seconds, and at once when this viewer wrote
something (``Changes.bump``); when it differs it sends ``event: change``, and the page's
script fetches itself again. Other processes' writes (a running turn's step checkpoints)
are seen by the poll. A comment line every ~15 s keeps proxies from closing the stream;
streams end when the server stops (``Changes.close``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

__all__ = ["Changes", "event_stream"]

_HEARTBEAT = 15.0


class Changes:
    """A counter of this viewer's own writes that waiters can sleep on."""

    def __init__(self) -> None:
        self.version = 0
        self.closed = False
        self._event = asyncio.Event()

    def close(self) -> None:
        """The server is stopping: every stream ends (so shutdown need not wait for them)."""
        self.closed = True
        self.bump()

    def bump(self) -> None:
        """Something changed: wake every waiter."""
        self.version += 1
        event, self._event = self._event, asyncio.Event()
        event.set()

    async def wait(self, seconds: float) -> None:
        """Return after the next ``bump`` or ``seconds``, whichever is first."""
        try:
            await asyncio.wait_for(self._event.wait(), seconds)
        except TimeoutError:
            pass


async def event_stream(
    fingerprint: Callable[[], Awaitable[object]],
    changes: Changes,
    *,
    poll_interval: float,
    disconnected: Callable[[], Awaitable[bool]],
) -> AsyncIterator[str]:
    """The SSE text of one subscription (ends when the client goes away).

    Args:
        fingerprint: what to compare (a revision, or revisions).
        changes: this viewer's own writes.
        poll_interval: seconds between looks at the store.
        disconnected: whether the client has gone.
    """
    last = await fingerprint()
    yield "retry: 2000\n\n"
    quiet = 0.0
    while not changes.closed and not await disconnected():
        await changes.wait(poll_interval)
        if changes.closed:
            return
        now = await fingerprint()
        if now != last:
            last = now
            quiet = 0.0
            yield f"event: change\ndata: {json.dumps({'version': changes.version})}\n\n"
            continue
        quiet += poll_interval
        if quiet >= _HEARTBEAT:
            quiet = 0.0
            yield ": still here\n\n"
