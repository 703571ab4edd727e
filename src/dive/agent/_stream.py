"""``AgentStream``: a run's events as they happen, and views of them for people.

``async for event in agent.stream(...)`` gives every event (``turn_ended`` last), then
``stream.result``. ``async with agent.stream(...) as s:`` gives the same stream with views
that each consume it: ``s.text_deltas()`` (the answer's text as it arrives),
``s.text()`` (the text so far, after each delta) and ``s.partial_output()`` (the typed
output, validated as a partial value while the model writes it). Leaving the block (or
``aclose()``) before the end cancels the run, which is still closed and saved.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, TypeVar

import pydantic_core
from pydantic import ValidationError

from dive.agent._events import AgentEvent, MessageEvent, ModelStreamEvent
from dive.agent._output import OutputSpec
from dive.agent._result import RunResult
from dive.errors import UserError
from dive.llm import ContentBlockDelta, ContentBlockStart, InputJSONDelta, TextDelta
from dive.messages import ToolCall

__all__ = ["AgentStream"]

OutputT = TypeVar("OutputT")

_DONE: Any = object()
_NOTHING: Any = object()


class AgentStream(Generic[OutputT]):
    """Async iterator of a run's events; ends after ``turn_ended``.

    Events are delivered one at a time: the run waits while the consumer handles each one.
    If the consumer stops early, the run is cancelled (and still closed and saved).

    Args:
        start: starts the run with an event handler and returns its result.
        output: how partial output is parsed (typed output), if any.
    """

    def __init__(
        self,
        start: Callable[[Callable[[AgentEvent], Awaitable[None]]], Awaitable[RunResult[Any]]],
        output: OutputSpec | None = None,
    ) -> None:
        self._start = start
        self._output = output
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=1)
        self._task: asyncio.Task[RunResult[Any]] | None = None
        self._result: RunResult[OutputT] | None = None

    async def _handler(self, event: AgentEvent) -> None:
        await self._queue.put(event)

    def _begin(self) -> None:
        if self._task is not None:
            raise UserError("an AgentStream can be consumed only once")
        self._task = asyncio.ensure_future(self._run())

    def __aiter__(self) -> AgentStream[OutputT]:
        self._begin()
        return self

    async def __aenter__(self) -> AgentStream[OutputT]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _run(self) -> RunResult[Any]:
        try:
            return await self._start(self._handler)
        finally:
            await self._queue.put(_DONE)

    async def __anext__(self) -> AgentEvent:
        if self._task is None:
            self._begin()
        item = await self._queue.get()
        if item is _DONE:
            assert self._task is not None
            self._result = await self._task
            raise StopAsyncIteration
        return item

    async def aclose(self) -> None:
        """Stop consuming: cancel the run if it is still going."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            while not self._task.done():
                try:
                    self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    await asyncio.sleep(0)
            await asyncio.gather(self._task, return_exceptions=True)

    @property
    def result(self) -> RunResult[OutputT]:
        """The run's result, once the stream is exhausted."""
        if self._result is None:
            raise UserError("the stream's result is available once the stream has finished")
        return self._result

    # --- views -------------------------------------------------------------------------------

    async def text_deltas(self) -> AsyncIterator[str]:
        """The answer's text as it arrives (a model that does not stream: each message's).

        Consumes the stream; ``result`` is set once it ends.
        """
        streamed = False
        async for event in self:
            if isinstance(event, ModelStreamEvent):
                raw = event.event
                if isinstance(raw, ContentBlockDelta) and isinstance(raw.delta, TextDelta):
                    streamed = True
                    if raw.delta.text:
                        yield raw.delta.text
            elif isinstance(event, MessageEvent):
                if not streamed and event.message.role == "assistant" and event.message.text:
                    yield event.message.text
                streamed = False

    async def text(self) -> AsyncIterator[str]:
        """The text of the current model call so far, after each delta."""
        so_far = ""
        async for event in self:
            if isinstance(event, ModelStreamEvent):
                raw = event.event
                if isinstance(raw, ContentBlockDelta) and isinstance(raw.delta, TextDelta):
                    so_far += raw.delta.text
                    yield so_far
            elif isinstance(event, MessageEvent) and event.message.role == "assistant":
                text = event.message.text
                if text and text != so_far:
                    yield text
                so_far = ""

    async def partial_output(self) -> AsyncIterator[OutputT]:
        """The typed output while the model writes it, each time it validates as partial.

        Follows the submit tool's JSON in tool mode, the answer's JSON in native and
        prompted modes, and the text itself for ``str`` output. The last value is the
        complete output only if the turn accepted it: check ``result.output``.
        """
        spec = self._output
        if spec is None:
            raise UserError("partial_output() needs a stream from agent.stream()")
        parser = _PartialParser(spec)
        async for event in self:
            if not isinstance(event, ModelStreamEvent):
                if isinstance(event, MessageEvent):
                    parser.reset()
                continue
            value = parser.feed(event)
            if value is not _NOTHING:
                yield value


class _PartialParser:
    """Follows one model call's stream and validates the output's JSON as it grows."""

    def __init__(self, spec: OutputSpec) -> None:
        self._spec = spec
        self.reset()

    def reset(self) -> None:
        self._submit: dict[int, Any] = {}  # block index -> the submit target
        self._buffer = ""
        self._last: Any = _NOTHING

    def feed(self, event: ModelStreamEvent) -> Any:
        raw = event.event
        spec = self._spec
        if isinstance(raw, ContentBlockStart) and isinstance(raw.block, ToolCall):
            tool = spec.tool_named(raw.block.name)
            if tool is not None:
                self._submit[raw.index] = spec.targets[spec.tools.index(tool)]
                self._buffer = ""
            return _NOTHING
        if not isinstance(raw, ContentBlockDelta):
            return _NOTHING
        delta = raw.delta
        if isinstance(delta, InputJSONDelta) and raw.index in self._submit:
            self._buffer += delta.partial_json
            return self._validate(self._submit[raw.index])
        if isinstance(delta, TextDelta) and not spec.tools:
            self._buffer += delta.text
            if spec.text:
                return self._changed(self._buffer)
            return self._validate(spec.targets[0])
        return _NOTHING

    def _validate(self, target: Any) -> Any:
        text = self._buffer.strip()
        if text.startswith("```"):
            text = text.split("\n", 1)[1] if "\n" in text else ""
        try:
            data = pydantic_core.from_json(text, allow_partial="trailing-strings")
        except ValueError:
            return _NOTHING
        if target.wrapped:
            if not isinstance(data, dict) or "result" not in data:
                return _NOTHING
            data = data["result"]  # pyright: ignore[reportUnknownVariableType]
        try:
            value = target.adapter.validate_python(data, experimental_allow_partial=True)
        except ValidationError:
            return _NOTHING
        return self._changed(value)

    def _changed(self, value: Any) -> Any:
        if self._last is not _NOTHING and value == self._last:
            return _NOTHING
        self._last = value
        return value
