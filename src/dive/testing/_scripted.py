"""``ScriptedModel``: a model that answers from a script, for tests and offline demos.

Each request takes the next script item: a :class:`ModelResponse`, a string (a text answer),
a :class:`Step` (a response plus faults: raise before the stream, cut the stream after N
events, delays, a forced stop reason) or a callable that receives the request and returns
any of those (sync or async). Every request is captured in ``requests``;
``assert_consumed()`` checks the whole script was used.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from dive.llm import ModelRequest, ModelResponse, StreamEvent, Usage, response_to_events
from dive.messages import TextBlock, ToolCall
from dive.messages.codec import JSONValue

__all__ = [
    "ScriptExhaustedError",
    "ScriptItem",
    "ScriptedModel",
    "Step",
    "call",
    "text",
    "tool_use",
]


class ScriptExhaustedError(AssertionError):
    """The scripted model received more requests than its script has items."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """A scripted response with fault injection.

    Attributes:
        response: what to answer (None with ``raise_before`` set).
        raise_before: raised before any event is produced (a failed request).
        cut_after: end the stream after this many events (without ``message_stop``).
        cut_error: raised at the cut; None ends the stream silently.
        delay: seconds to wait before the first event.
        event_delay: seconds to wait before each event.
        stop_reason: replaces the response's stop reason.
    """

    response: ModelResponse | str | None = None
    raise_before: BaseException | None = None
    cut_after: int | None = None
    cut_error: BaseException | None = None
    delay: float = 0.0
    event_delay: float = 0.0
    stop_reason: str | None = None

    def resolved(self) -> ModelResponse:
        r = self.response
        if r is None:
            r = text("")
        elif isinstance(r, str):
            r = text(r)
        if self.stop_reason is not None:
            r = replace(r, stop_reason=self.stop_reason)
        return r


ScriptResult = ModelResponse | str | Step
ScriptItem = ScriptResult | Callable[[ModelRequest], ScriptResult | Awaitable[ScriptResult]]


def _usage(output_chars: int, calls: int) -> Usage:
    return Usage(input_tokens=0, output_tokens=max(1, output_chars // 4 + 8 * calls), requests=1)


def text(content: str, *, stop_reason: str = "end_turn", **kwargs: Any) -> ModelResponse:
    """A response holding one text block.

    Args:
        content: the text of the answer.
        stop_reason: the raw stop reason (``end_turn``; ``max_tokens``, ``refusal``, ... to test
            other endings).
        kwargs: other :class:`~dive.llm.ModelResponse` fields (``usage``, ``model``, ...).
    """
    kwargs.setdefault("usage", _usage(len(content), 0))
    blocks = (TextBlock(text=content),) if content else ()
    return ModelResponse(content=blocks, stop_reason=stop_reason, **kwargs)


def call(name: str, arguments: Mapping[str, JSONValue] | None = None, *, id: str = "") -> ToolCall:
    """A tool call block (``id`` is filled in by ``tool_use`` when empty).

    Args:
        name: the tool to call.
        arguments: the call's JSON arguments (default ``{}``).
        id: the call id; empty: ``tool_use`` numbers it ``call_<n>``.
    """
    return ToolCall(id=id, name=name, arguments=dict(arguments or {}))


_counter = iter(range(1, 1 << 62))


def tool_use(
    *calls: ToolCall | tuple[str, Mapping[str, JSONValue]],
    text: str | None = None,
    stop_reason: str = "tool_use",
    **kwargs: Any,
) -> ModelResponse:
    """A response with optional text followed by tool calls (ids ``call_<n>`` when empty).

    Args:
        calls: the calls, as :func:`call` blocks or ``(name, arguments)`` pairs.
        text: text the model writes before the calls, if any.
        stop_reason: the raw stop reason (``tool_use``).
        kwargs: other :class:`~dive.llm.ModelResponse` fields.
    """
    blocks: list[Any] = [TextBlock(text=text)] if text else []
    for c in calls:
        tc = c if isinstance(c, ToolCall) else call(c[0], c[1])
        if not tc.id:
            tc = replace(tc, id=f"call_{next(_counter)}")
        blocks.append(tc)
    kwargs.setdefault("usage", _usage(len(text or ""), len(calls)))
    return ModelResponse(content=tuple(blocks), stop_reason=stop_reason, **kwargs)


class ScriptedModel:
    """A :class:`~dive.llm.Model` that answers from a script.

    Args:
        script: what to answer, one item per request in order: a ``ModelResponse``, a string (a text
            answer), a :class:`Step` (a response with faults), or a callable that receives the
            :class:`~dive.llm.ModelRequest` and returns any of those (sync or async).
        name: the model's name (in usage, traces and pricing).
        provider: the provider label it reports.
        streaming: answer through ``stream`` (True) or only through ``generate``.
    """

    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        name: str = "scripted",
        provider: str = "scripted",
        streaming: bool = True,
    ) -> None:
        self._script: deque[ScriptItem] = deque(script)
        self._name = name
        self._provider = provider
        self._streaming = streaming
        self.requests: list[ModelRequest] = []
        self._served = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def supports_streaming(self) -> bool:
        return self._streaming

    @property
    def remaining(self) -> int:
        """Script items not yet used."""
        return len(self._script)

    def add(self, *items: ScriptItem) -> None:
        """Append items to the script.

        Args:
            items: more script items, answered after the current ones.
        """
        self._script.extend(items)

    def assert_consumed(self) -> None:
        """Raise ``AssertionError`` if script items are left."""
        if self._script:
            raise AssertionError(
                f"ScriptedModel served {self._served} request(s); "
                f"{len(self._script)} script item(s) were never used"
            )

    async def _next(self, request: ModelRequest) -> Step:
        self.requests.append(request)
        if not self._script:
            raise ScriptExhaustedError(
                f"ScriptedModel received request #{len(self.requests)} but its script had only "
                f"{self._served} item(s); add more with model.add(...)"
            )
        item = self._script.popleft()
        self._served += 1
        if callable(item) and not isinstance(item, ModelResponse | Step | str):
            out = item(request)
            item = await out if inspect.isawaitable(out) else out
        if isinstance(item, Step):
            return item
        return Step(response=item)

    async def generate(self, request: ModelRequest) -> ModelResponse:
        step = await self._next(request)
        if step.delay:
            await asyncio.sleep(step.delay)
        if step.raise_before is not None:
            raise step.raise_before
        if step.cut_after is not None:
            raise step.cut_error or ConnectionResetError("scripted connection reset")
        return step.resolved()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        step = await self._next(request)
        if step.delay:
            await asyncio.sleep(step.delay)
        if step.raise_before is not None:
            raise step.raise_before
        for n, event in enumerate(response_to_events(step.resolved())):
            if step.cut_after is not None and n >= step.cut_after:
                if step.cut_error is not None:
                    raise step.cut_error
                return
            if step.event_delay:
                await asyncio.sleep(step.event_delay)
            yield event
