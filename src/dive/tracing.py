"""The tracer protocol: observe runs, model calls and tool calls; never modify them.

``start_agent_run``, ``start_chat`` and ``start_tool_call`` return spans; each span's ``end``
is called exactly once (``error`` set when the step failed; a tool ``is_error`` result is a
success). A chat span may also define ``add_retry(notice: RetryNotice)``: it is then told of
each provider retry inside its call before the provider waits. The method is optional (not
part of the ``ChatSpan`` protocol), so span classes without it stay valid. Likewise a run span
may define ``leave()``: the loop calls it in the task that started the run once the run is
over (however it ended), to restore context the tracer changed. A tracer itself may define
``record(trace)``: the typed executor (``dive.executor``) then hands it each finished
``ExecutionTrace``. This is dive's one tracer protocol: agents and executions both report to
it (``dive.executor.Tracer`` is this class). ``NopTracer`` is the default; ``MultiTracer``
fans out. The OpenTelemetry adapter is ``dive.otel.OTelTracer`` (extra ``otel``); the core
imports without it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from dive.llm import ModelResponse, ModelSettings, RetryNotice, Usage
from dive.messages import Message, ToolCall, ToolResult
from dive.messages.codec import empty

__all__ = [
    "AgentRunInfo",
    "AgentRunSpan",
    "ChatInfo",
    "ChatSpan",
    "MultiTracer",
    "NopTracer",
    "ToolCallInfo",
    "ToolSpan",
    "Tracer",
]

log = logging.getLogger("dive.tracing")


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentRunInfo:
    """What a run span knows at its start.

    Attributes:
        agent_name: the agent's name, if any.
        agent_id: the agent's id, if any.
        model: the model's name.
        provider: the model's provider label.
        turn_id: the turn the invocation runs.
        session_id: the session, or None when stateless.
        attributes: more span attributes (the agent's version and description, say).
    """

    agent_name: str | None
    agent_id: str | None
    model: str
    provider: str
    turn_id: str
    session_id: str | None = None
    attributes: Mapping[str, Any] = field(default_factory=empty)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatInfo:
    """What a model-call span knows at its start.

    Attributes:
        model: the model's name.
        provider: the model's provider label.
        streaming: the call streams.
        settings: the call's merged settings.
        messages: the messages sent (tracers that capture content read them).
        iteration: the zero-based model call of the turn.
    """

    model: str
    provider: str
    streaming: bool
    settings: ModelSettings
    messages: Sequence[Message]
    iteration: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallInfo:
    """What a tool-call span knows at its start.

    Attributes:
        call: the model's tool call.
        origin: where the tool comes from (``local``, ``mcp:<server>``, ...).
        tags: the tool's tags.
        effect: the tool's effect type, if declared.
        risk: the tool's risk level, if declared.
    """

    call: ToolCall
    origin: str = "local"
    tags: tuple[str, ...] = ()
    effect: str | None = None
    risk: str | None = None


class AgentRunSpan(Protocol):
    """A run span."""

    def set_response(self, status: str, reason: str | None, next_step: str | None) -> None:
        """Record how the turn ended.

        Args:
            status: ``completed``, ``suspended`` or ``incomplete``.
            reason: the incomplete reason, if any.
            next_step: the advised next step of an incomplete turn, if any.
        """
        ...

    def set_usage(self, usage: Usage) -> None:
        """Record the invocation's usage (and cost).

        Args:
            usage: the invocation's usage.
        """
        ...

    def end(self, error: BaseException | None = None) -> None:
        """End the span exactly once.

        Args:
            error: what ended the run, if it failed.
        """
        ...


class ChatSpan(Protocol):
    """A model-call span."""

    def set_response(self, response: ModelResponse) -> None:
        """Record the response.

        Args:
            response: the model's response.
        """
        ...

    def set_time_to_first_chunk(self, seconds: float) -> None:
        """Record the latency of the first stream event.

        Args:
            seconds: from the request to its first stream event.
        """
        ...

    def end(self, error: BaseException | None = None) -> None:
        """End the span exactly once.

        Args:
            error: what made the call fail, if it did.
        """
        ...


class ToolSpan(Protocol):
    """A tool-call span."""

    def set_result(self, result: ToolResult) -> None:
        """Record the result.

        Args:
            result: the call's result.
        """
        ...

    def end(self, error: BaseException | None = None) -> None:
        """End the span exactly once.

        Args:
            error: what made the call fail, if it raised.
        """
        ...


class Tracer(Protocol):
    """Observe runs, model calls and tool calls."""

    def start_agent_run(self, info: AgentRunInfo) -> AgentRunSpan:
        """A span for one invocation.

        Args:
            info: what is known at the start of the invocation.
        """
        ...

    def start_chat(self, info: ChatInfo) -> ChatSpan:
        """A span for one model call.

        Args:
            info: what is known at the start of the model call.
        """
        ...

    def start_tool_call(self, info: ToolCallInfo) -> ToolSpan:
        """A span for one tool call.

        Args:
            info: what is known at the start of the tool call.
        """
        ...


class _NopSpan:
    __slots__ = ()

    def set_response(self, *args: Any, **kwargs: Any) -> None:
        pass

    def set_usage(self, usage: Usage) -> None:
        pass

    def set_time_to_first_chunk(self, seconds: float) -> None:
        pass

    def add_retry(self, notice: RetryNotice) -> None:
        pass

    def set_result(self, result: ToolResult) -> None:
        pass

    def end(self, error: BaseException | None = None) -> None:
        pass


_NOP_SPAN = _NopSpan()


class NopTracer:
    """A tracer that records nothing (the default)."""

    def start_agent_run(self, info: AgentRunInfo) -> AgentRunSpan:
        return _NOP_SPAN

    def start_chat(self, info: ChatInfo) -> ChatSpan:
        return _NOP_SPAN

    def start_tool_call(self, info: ToolCallInfo) -> ToolSpan:
        return _NOP_SPAN


class _MultiSpan:
    __slots__ = ("_spans",)

    def __init__(self, spans: list[Any]) -> None:
        self._spans = spans

    def _each(self, method: str, *args: Any) -> None:
        for s in self._spans:
            fn = getattr(s, method, None)
            if fn is None:  # a span class older than the method (``add_retry``)
                continue
            try:
                fn(*args)
            except Exception:
                log.exception("tracer span %s failed", method)

    def set_response(self, *args: Any) -> None:
        self._each("set_response", *args)

    def set_usage(self, usage: Usage) -> None:
        self._each("set_usage", usage)

    def set_time_to_first_chunk(self, seconds: float) -> None:
        self._each("set_time_to_first_chunk", seconds)

    def add_retry(self, notice: RetryNotice) -> None:
        self._each("add_retry", notice)

    def leave(self) -> None:
        self._each("leave")

    def set_result(self, result: ToolResult) -> None:
        self._each("set_result", result)

    def end(self, error: BaseException | None = None) -> None:
        self._each("end", error)


class MultiTracer:
    """Fan out to several tracers (None entries are dropped). Tracer errors are logged.

    Args:
        tracers: the tracers to fan out to; None entries are dropped.
    """

    def __init__(self, *tracers: Tracer | None) -> None:
        self.tracers: tuple[Tracer, ...] = tuple(t for t in tracers if t is not None)

    def _start(self, method: str, info: Any) -> Any:
        spans: list[Any] = []
        for t in self.tracers:
            try:
                spans.append(getattr(t, method)(info))
            except Exception:
                log.exception("tracer %s failed", method)
        return _MultiSpan(spans)

    def start_agent_run(self, info: AgentRunInfo) -> AgentRunSpan:
        return self._start("start_agent_run", info)

    def start_chat(self, info: ChatInfo) -> ChatSpan:
        return self._start("start_chat", info)

    def start_tool_call(self, info: ToolCallInfo) -> ToolSpan:
        return self._start("start_tool_call", info)
