"""Store doubles shared by tests."""

from __future__ import annotations

from dive.sessions import MemorySessionStore
from dive.turns import Turn


class CopyingStore(MemorySessionStore):
    """Keeps every record written: what a crash right after that write would leave."""

    def __init__(self) -> None:
        super().__init__()
        self.written: list[Turn] = []

    async def checkpoint(self, id: str, turn: Turn, *, expected_revision: int) -> int:
        self.written.append(turn)
        return await super().checkpoint(id, turn, expected_revision=expected_revision)
