"""A shared ``on_event`` collector for the provider tests."""

from __future__ import annotations

from dive.agent import AgentEvent, ModelStreamEvent
from dive.llm import ContentBlockDelta, MessageStart, TextDelta


class Events:
    """An ``on_event`` handler keeping every event."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    async def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)

    def streamed_text(self) -> str:
        out: list[str] = []
        for e in self.events:
            if (
                isinstance(e, ModelStreamEvent)
                and isinstance(e.event, ContentBlockDelta)
                and isinstance(e.event.delta, TextDelta)
            ):
                out.append(e.event.delta.text)
        return "".join(out)

    def message_starts(self) -> int:
        return sum(
            1
            for e in self.events
            if isinstance(e, ModelStreamEvent) and isinstance(e.event, MessageStart)
        )
