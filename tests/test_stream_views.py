"""``agent.stream()`` for people: text deltas, accumulated text, partial typed output."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from dive import Agent
from dive.agent import TurnEndedEvent
from dive.llm import (
    ContentBlockDelta,
    InputJSONDelta,
    ModelRequest,
    ModelResponse,
    StreamEvent,
    TextDelta,
    response_to_events,
)
from dive.testing import ScriptedModel, call, text, tool_use


class Forecast(BaseModel):
    city: str
    summary: str = ""
    high: int | None = None


class ChunkedModel(ScriptedModel):
    """Streams every text and JSON delta in pieces of ``size`` characters."""

    def __init__(self, script: Iterable[ModelResponse], size: int = 4) -> None:
        super().__init__(script)
        self._size = size

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        response = self._script.popleft()  # pyright: ignore[reportPrivateUsage]
        assert isinstance(response, ModelResponse)
        for event in response_to_events(response):
            if isinstance(event, ContentBlockDelta) and isinstance(
                event.delta, TextDelta | InputJSONDelta
            ):
                whole = (
                    event.delta.text
                    if isinstance(event.delta, TextDelta)
                    else event.delta.partial_json
                )
                for i in range(0, len(whole), self._size):
                    piece = whole[i : i + self._size]
                    delta = (
                        TextDelta(text=piece)
                        if isinstance(event.delta, TextDelta)
                        else InputJSONDelta(partial_json=piece)
                    )
                    yield replace(event, delta=delta)
            else:
                yield event


async def test_text_deltas_then_the_result() -> None:
    agent = Agent(model=ChunkedModel([text("The weather is fine.")]))
    async with agent.stream("weather?") as s:
        pieces = [d async for d in s.text_deltas()]
    assert len(pieces) > 1
    assert "".join(pieces) == "The weather is fine."
    assert s.result.output == "The weather is fine."


async def test_text_accumulates() -> None:
    agent = Agent(model=ChunkedModel([text("abcdefghij")], size=3))
    async with agent.stream("go") as s:
        snapshots = [t async for t in s.text()]
    assert snapshots == ["abc", "abcdef", "abcdefghi", "abcdefghij"]


async def test_partial_output_follows_the_submit_tool() -> None:
    final: dict[str, Any] = {"city": "Oslo", "summary": "Clear skies all day", "high": 21}
    model = ChunkedModel([tool_use(call("submit_result", final))], size=5)
    agent = Agent(model=model, output_type=Forecast)
    async with agent.stream("forecast") as s:
        partials = [p async for p in s.partial_output()]
    assert len(partials) > 2
    assert all(isinstance(p, Forecast) for p in partials)
    assert partials[-1] == Forecast(**final)
    assert s.result.output == Forecast(**final)
    summaries = [p.summary for p in partials]
    assert summaries == sorted(summaries, key=len)  # grows as the JSON streams


async def test_partial_output_in_native_mode_reads_the_text() -> None:
    final: dict[str, Any] = {"city": "Bergen", "summary": "Rain", "high": 12}
    model = ChunkedModel([text(json.dumps(final))], size=6)
    agent = Agent(model=model, output_type=Forecast, output_mode="native")
    async with agent.stream("forecast") as s:
        partials = [p async for p in s.partial_output()]
    assert partials[-1] == Forecast(**final)
    assert len(partials) > 1


async def test_raw_events_are_still_there() -> None:
    agent = Agent(model=ScriptedModel([text("hi")]))
    events = [e async for e in agent.stream("go")]
    assert isinstance(events[-1], TurnEndedEvent)


async def test_leaving_the_block_early_cancels_and_closes_the_run() -> None:
    agent = Agent(model=ChunkedModel([text("x" * 400)], size=2))
    async with agent.stream("go") as s:
        async for _ in s.text_deltas():
            break
    assert s._task is not None
    assert s._task.done()
