"""The thread-safe queue of script items every wire simulator serves from."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from typing import Generic, TypeVar

__all__ = ["ScriptQueue"]

ItemT = TypeVar("ItemT")
FaultT = TypeVar("FaultT")


class ScriptQueue(Generic[ItemT, FaultT]):
    """A thread-safe FIFO of script items; ``fault_type`` marks the items served as faults."""

    def __init__(self, fault_type: type[FaultT]) -> None:
        self._lock = threading.Lock()
        self._items: deque[ItemT] = deque()
        self._fault_type = fault_type

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def add(self, items: Iterable[ItemT]) -> None:
        with self._lock:
            self._items.extend(items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def pop(self) -> ItemT | None:
        with self._lock:
            return self._items.popleft() if self._items else None

    def pop_fault(self) -> FaultT | None:
        """The head item when it is a fault (consumed), else None."""
        with self._lock:
            if self._items and isinstance(self._items[0], self._fault_type):
                head = self._items.popleft()
                assert isinstance(head, self._fault_type)
                return head
            return None
