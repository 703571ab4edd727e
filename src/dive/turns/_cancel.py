"""``CancelToken``: hard and soft cancellation of a run.

``cancel()`` stops dive's own work at once: the in-flight model call is abandoned, running
tool tasks are cancelled and the turn ends ``canceled`` with a result. ``soft_cancel()``
stops at the next step boundary and lets running calls finish, so it never produces an
``unknown`` call. A token may link to a parent token (subagents inherit an outer request).
"""

from __future__ import annotations

import asyncio

__all__ = ["CancelToken"]


class CancelToken:
    """Request that a run stop, now (``cancel``) or at the next step boundary (``soft_cancel``).

    Args:
        parent: a token whose hard cancel also cancels this one (a subagent's token, say).
    """

    __slots__ = ("_event", "_parent", "_soft", "reason")

    def __init__(self, parent: CancelToken | None = None) -> None:
        self._event: asyncio.Event | None = None
        self._soft = False
        self._parent = parent
        self.reason: str | None = None

    def cancel(self, reason: str | None = None) -> None:
        """Stop the run now; running tool tasks are cancelled.

        Args:
            reason: why, recorded as the outcome's error (default "canceled by the user").
        """
        self.reason = reason or self.reason or "canceled by the user"
        self._soft = True
        self._waiter().set()

    def soft_cancel(self, reason: str | None = None) -> None:
        """Stop at the next step boundary; running calls finish.

        Args:
            reason: why, recorded as the outcome's error (default "soft-canceled by the user").
        """
        self.reason = reason or self.reason or "soft-canceled by the user"
        self._soft = True

    @property
    def cancelled(self) -> bool:
        """True once a hard cancel was requested (here or on a parent)."""
        ev = self._event
        return (ev is not None and ev.is_set()) or (
            self._parent is not None and self._parent.cancelled
        )

    @property
    def soft_cancel_requested(self) -> bool:
        """True once any stop was requested (soft or hard, here or on a parent)."""
        return self._soft or (self._parent is not None and self._parent.soft_cancel_requested)

    def _waiter(self) -> asyncio.Event:
        if self._event is None:
            self._event = asyncio.Event()
        return self._event

    async def wait(self) -> None:
        """Return once a hard cancel is requested."""
        if self._parent is not None:
            parent = asyncio.ensure_future(self._parent.wait())
            mine = asyncio.ensure_future(self._waiter().wait())
            try:
                await asyncio.wait({parent, mine}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                parent.cancel()
                mine.cancel()
            return
        await self._waiter().wait()
