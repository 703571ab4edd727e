"""A fake model for scale benchmarks: stateless, so one agent serves any number of runs.

It answers from the request alone (how many tool results it holds), after ``latency``
seconds, streaming the same events a provider would; nothing is kept per request.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from dive.llm import ModelRequest, ModelResponse, StreamEvent, response_to_events
from dive.testing import call, text, tool_use


class LatencyModel:
    """``iterations`` tool calls of ``add``, then a final answer; each call waits ``latency``."""

    def __init__(self, iterations: int, latency: float) -> None:
        self._latency = latency
        self._responses: list[ModelResponse] = [
            tool_use(call("add", {"a": i, "b": 1}, id=f"c{i}")) for i in range(iterations)
        ]
        self._responses.append(text("done"))

    @property
    def name(self) -> str:
        return "latency"

    @property
    def provider(self) -> str:
        return "fake"

    @property
    def supports_streaming(self) -> bool:
        return True

    def _answer(self, request: ModelRequest) -> ModelResponse:
        done = sum(1 for m in request.messages if m.role == "tool")
        return self._responses[min(done, len(self._responses) - 1)]

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        await asyncio.sleep(self._latency)
        for event in response_to_events(self._answer(request)):
            yield event

    async def generate(self, request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(self._latency)
        return self._answer(request)
