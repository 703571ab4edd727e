"""What ends one execute: a commit or an abort, chosen in model order.

Handlers of one round finish in any order (pooled ones concurrently, held-out ones last), so
each terminal outcome is stored under its call id as it happens, and nothing is decided then.
When the loop's turn is over, ``settle(order)`` picks the first terminal outcome in the model's
order of calls: a slow commit made before a fast one wins, an abort before a commit raises,
and a pooled ``Commit`` never overrides a submission the model made earlier. The calls that
lost are no longer ``terminal`` in the trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dive.executor._trace import TracedCall

__all__ = ["Outcomes"]


@dataclass(slots=True)
class _End:
    response: Any = None
    abort: BaseException | None = None
    record: TracedCall | None = None


class Outcomes:
    """The terminal outcomes of one execute, and the per-execute counters the tools share."""

    def __init__(self) -> None:
        self._ends: dict[str, _End] = {}
        self.commit: Any = None
        self.committed = False
        self.abort: BaseException | None = None
        self.control: Any = None  # the execute's Control (round number, calls seen)
        self.interventions: list[str] = []  # for the interventions metric

    @property
    def round(self) -> int:
        """The round the running handlers belong to."""
        return self.control.round if self.control is not None else 0

    @property
    def pending(self) -> bool:
        """Whether some call of the current batch committed or aborted (not settled yet)."""
        return bool(self._ends)

    def set_commit(self, call_id: str, response: Any, record: TracedCall | None = None) -> None:
        """Call ``call_id`` committed ``response``."""
        self._ends.setdefault(call_id, _End(response=response, record=record))

    def set_abort(
        self, call_id: str, abort: BaseException, record: TracedCall | None = None
    ) -> None:
        """Call ``call_id`` aborted the run."""
        self._ends.setdefault(call_id, _End(abort=abort, record=record))

    def settle(self, order: Sequence[str]) -> None:
        """Choose the first terminal outcome in model ``order`` (call ids); clear the rest.

        Ids missing from ``order`` (seed calls) come after it, in the order they ended.
        """
        if not self._ends or self.committed or self.abort is not None:
            return
        rank = {cid: i for i, cid in enumerate(order)}
        ids = sorted(self._ends, key=lambda cid: rank.get(cid, len(rank)))
        winner = self._ends[ids[0]]
        if winner.abort is not None:
            self.abort = winner.abort
        else:
            self.commit, self.committed = winner.response, True
        for cid in ids[1:]:
            record = self._ends[cid].record
            if record is not None:
                record.terminal = False
        self._ends.clear()
