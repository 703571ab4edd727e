"""``TemporalTurnHandle``: a turn running in a workflow, seen from a client.

``result()`` returns each place the turn comes to rest in order (a suspended result, then
the result after ``resume``, …), read from the store once the workflow reports it stored.
``resume()`` is a workflow update (the same idempotency and conflict rules as
``run(tool_results=...)``); ``cancel()`` is a hard cancel (workflow cancellation) or a soft
one (a signal); ``turn()`` reads the live record; ``text()`` polls the live text.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from dive.agent import RunResult
from dive.errors import ToolCallNotPendingError
from dive.temporal._codec import encode_tool_results
from dive.temporal._results import error_of, run_result
from dive.temporal._wire import LiveTurn, Settled, TextChunk
from dive.turns import Turn

if TYPE_CHECKING:
    from dive.temporal._agent import TemporalAgent

__all__ = ["TemporalTurnHandle"]

OutputT = TypeVar("OutputT")
T = TypeVar("T")


def _translated(exc: BaseException) -> BaseException:
    """The dive error an update or workflow failure carries (``exc`` itself otherwise)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ApplicationError) and cause.type:
            return error_of(cause.type, cause.message) or exc
        cause = cause.__cause__
    return exc


class TemporalTurnHandle(Generic[OutputT]):
    """A turn of ``session_id`` running as a workflow (``TemporalAgent.start`` returns one).

    Args:
        owner: The ``TemporalAgent`` whose workflow runs the turn.
        client: A client from ``connect``.
        workflow_id: The turn workflow's id.
        session_id: The session the turn belongs to.
    """

    def __init__(
        self, owner: TemporalAgent[OutputT, Any], client: Client, workflow_id: str, session_id: str
    ) -> None:
        self._owner = owner
        self._client = client
        self._workflow: WorkflowHandle[Any, Settled] = client.get_workflow_handle(
            workflow_id, result_type=Settled
        )
        self._next = 0
        self._taken: set[str] = set()
        self.session_id = session_id
        """The session the turn belongs to."""
        self.workflow_id = workflow_id
        """The workflow's id (one open turn workflow per session)."""

    async def _update(self, name: str, arg: object, result_type: type[T]) -> T:
        handle = cast(Any, self._workflow)
        return await handle.execute_update(name, arg, result_type=result_type)

    async def _settled(self, index: int) -> Settled:
        while True:
            try:
                return await self._update("dive.settled", index, Settled)
            except (WorkflowUpdateFailedError, RPCError) as exc:
                status = (await self._workflow.describe()).status
                if status == WorkflowExecutionStatus.RUNNING:
                    continue  # it continued as new while we waited: ask the new run
                try:
                    return await self._workflow.result()
                except WorkflowFailureError as failure:
                    raise _translated(failure) from failure
                except Exception:
                    raise _translated(exc) from exc

    async def result(self) -> RunResult[OutputT]:
        """The next place the turn came to rest, as a ``RunResult`` (never raised for it).

        The first call returns the first settled result (completed, incomplete or suspended);
        after ``resume()``, the next call returns the result of the resumed turn.
        """
        settled = await self._settled(self._next)
        self._next += 1
        return await run_result(self._owner.agent, self._owner.store, settled)

    async def resume(self, *, tool_results: Mapping[str, Any]) -> None:
        """Resume the suspended turn with results (or ``ToolApproval``) by call id.

        Returns once the workflow took the results (a refused resume raises the dive error
        ``run(tool_results=...)`` raises: ``ConflictingToolResultError``, …); the next
        ``result()`` is the turn's next settled result.

        Args:
            tool_results: Results, or ``ToolApproval`` decisions, keyed by pending call id.
        """
        text = encode_tool_results(tool_results)
        try:
            await self._update("dive.resume", text, type(None))
        except WorkflowUpdateFailedError as exc:
            raise _translated(exc) from exc
        except RPCError as exc:
            if text in self._taken:
                return None  # the same results again, after the turn ended: already taken
            raise ToolCallNotPendingError(
                f"the turn's workflow {self.workflow_id} is not running ({exc.message}), so no "
                "call waits for these results; read the stored turn with agent.run or turn()"
            ) from exc
        self._taken.add(text)

    async def cancel(self, *, soft: bool = True) -> None:
        """Cancel the turn; then ``result()`` returns it ``canceled``.

        Args:
            soft: let running calls finish and stop before the next model call (a suspended
                turn is closed); ``soft=False`` cancels the workflow: running calls are
                cancelled and recorded ``unknown``.
        """
        if soft:
            await self._workflow.signal("dive.soft_cancel")
        else:
            await self._workflow.cancel()

    async def live(self) -> LiveTurn:
        """The workflow's view right now: ids, status, step, the calls running."""
        return await self._workflow.query("dive.turn", result_type=LiveTurn)

    async def turn(self) -> Turn | None:
        """The live record: the turn as last stored (None before its first step is stored)."""
        live = await self.live()
        if not live.turn_id:
            return None
        session = self._owner.store.session(self.session_id)
        snap = await session.load()
        if snap.open_turn is not None and snap.open_turn.id == live.turn_id:
            return snap.open_turn
        return next((t for t in await session.turns() if t.id == live.turn_id), None)

    async def text(self, *, poll_interval: float = 0.2) -> AsyncIterator[TextChunk]:
        """Live text chunks as the workflow receives them, until the turn settles.

        Each chunk names its step and activity attempt: when a step's attempt changes, the
        text of the earlier attempt was lost with its worker and the step starts over.
        Needs ``start(..., live_text=True)``.

        Args:
            poll_interval: Seconds between queries while no new text has arrived.
        """
        offset = 0
        settled = False
        while True:
            chunks = await self._workflow.query("dive.text", offset, result_type=list[TextChunk])
            for chunk in chunks:
                yield chunk
            offset += len(chunks)
            if settled:
                return  # the text read after the turn settled is the last of it
            if not chunks:
                settled = (await self.live()).status != "running"
                if not settled:
                    await asyncio.sleep(poll_interval)
