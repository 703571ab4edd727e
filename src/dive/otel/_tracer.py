"""``OTelTracer``: dive's tracer protocol on OpenTelemetry, GenAI semantic conventions.

Spans: ``invoke_agent {agent}`` for a run, ``chat {model}`` and ``execute_tool {tool}`` nested
under it (parallel tool calls included: their tasks inherit the run's context). Attributes
are the convention's ``gen_ai.*`` names; dive's own are under ``dive.*`` (turn id, status,
outcome reason, next step, cost; a tool's origin, effect, tags and risk level). An
incomplete turn's span has status error with the reason. Message content (prompts, answers,
tool arguments and results) is recorded only with ``capture_content=True``, as the
conventions' opt-in ``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``, after dive's redaction; error
texts are always redacted. A provider retry inside a model call is a ``dive.provider.retry``
event on its chat span (attempt, error type, HTTP status, delay).

While a run, model call or tool call is open its span is also the current OpenTelemetry span,
so spans other libraries open inside it (an instrumented HTTP client under ``chat``, a
database client inside a tool) nest under dive's; when it ends, the span that was current
before it is current again.
"""

from __future__ import annotations

import contextvars
import time
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from dive.llm import ModelResponse, RetryNotice, Usage
from dive.messages import ToolResult
from dive.messages.codec import dumps
from dive.otel._metrics import Instruments
from dive.redaction import redact
from dive.tracing import (
    AgentRunInfo,
    AgentRunSpan,
    ChatInfo,
    ChatSpan,
    ToolCallInfo,
    ToolSpan,
)

__all__ = ["OTelTracer"]

_RUN: contextvars.ContextVar[Span | None] = contextvars.ContextVar("dive_otel_run", default=None)


def _usage_attributes(usage: Usage) -> dict[str, Any]:
    out: dict[str, Any] = {
        "gen_ai.usage.input_tokens": usage.input_tokens
        + usage.cache_read_input_tokens
        + usage.cache_creation_input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_input_tokens,
    }
    if usage.reasoning_tokens is not None:
        out["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    if usage.cost is not None:
        out["dive.cost"] = usage.cost
    return out


_CONTENT_LIMIT = 64 * 1024


def _content(value: Any) -> str:
    """Captured content: compact JSON, redacted, at most 64 KiB."""
    text = redact(dumps(value))
    return text if len(text) <= _CONTENT_LIMIT else text[:_CONTENT_LIMIT] + "…[truncated]"


class _Current:
    """Make ``span`` the current OTel span until ``leave`` (only where it still is current).

    ``attach``/``detach`` tokens cannot be used: a run span ends in the run's task, but a tool
    span may end in a task copied from the one that started it. Setting the previous context
    back only while this span is still current is safe in both.
    """

    __slots__ = ("_previous", "_span")

    def __init__(self, span: Span) -> None:
        self._span = span
        self._previous: Context = otel_context.get_current()
        otel_context.attach(trace.set_span_in_context(span, self._previous))

    def leave(self) -> None:
        if trace.get_current_span() is self._span:
            otel_context.attach(self._previous)


def _fail(span: Span, error: BaseException) -> None:
    span.set_attribute("error.type", type(error).__name__)
    span.set_status(Status(StatusCode.ERROR, redact(str(error))[:1000]))


class _RunSpan:
    def __init__(self, span: Span, previous: Span | None, inst: Instruments) -> None:
        self._span, self._previous, self._inst = span, previous, inst
        self._current = _Current(span)
        self._status = "unknown"
        self._reason: str | None = None
        self._attrs: dict[str, Any] = {}

    def set_response(self, status: str, reason: str | None, next_step: str | None) -> None:
        self._status, self._reason = status, reason
        self._span.set_attribute("dive.turn.status", status)
        if reason is not None:
            self._span.set_attribute("dive.outcome.reason", reason)
        if next_step is not None:
            self._span.set_attribute("dive.outcome.next", next_step)
        if status == "incomplete":
            self._span.set_status(Status(StatusCode.ERROR, f"incomplete: {reason}"))

    def set_usage(self, usage: Usage) -> None:
        self._span.set_attributes(_usage_attributes(usage))
        if usage.cost is not None:
            self._inst.cost.add(usage.cost, self._inst.base)

    def end(self, error: BaseException | None = None) -> None:
        if error is not None:
            _fail(self._span, error)
        attrs = {**self._inst.base, "dive.turn.status": self._status}
        if self._reason is not None:
            attrs["dive.outcome.reason"] = self._reason
        self._inst.turns.add(1, attrs)
        self._span.end()
        self.leave()

    def leave(self) -> None:
        """Make what was current before the run current again (in the calling task too).

        The loop calls it in the task that started the run: a cancelled run is ended in a
        task of its own, whose context changes do not reach the caller's.
        """
        self._current.leave()
        if _RUN.get() is self._span:  # in the run's own context: the outer run is current again
            _RUN.set(self._previous)


class _ChatSpan:
    def __init__(
        self, span: Span, model: str, provider: str, inst: Instruments, capture: bool
    ) -> None:
        self._span, self._inst, self._capture = span, inst, capture
        self._current = _Current(span)
        self._start = time.monotonic()
        self._attrs = {
            **inst.base,
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
        }

    def set_response(self, response: ModelResponse) -> None:
        span = self._span
        if response.id:
            span.set_attribute("gen_ai.response.id", response.id)
        if response.model:
            span.set_attribute("gen_ai.response.model", response.model)
            self._attrs["gen_ai.response.model"] = response.model
        if response.stop_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [response.stop_reason])
        span.set_attributes(_usage_attributes(response.usage))
        if self._capture:
            output = [{"role": "assistant", "content": response.content}]
            span.set_attribute("gen_ai.output.messages", _content(output))
        u = response.usage
        total_in = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
        self._inst.tokens.record(total_in, {**self._attrs, "gen_ai.token.type": "input"})
        self._inst.tokens.record(u.output_tokens, {**self._attrs, "gen_ai.token.type": "output"})

    def set_time_to_first_chunk(self, seconds: float) -> None:
        self._span.set_attribute("dive.time_to_first_chunk", seconds)
        self._inst.first_chunk.record(seconds, self._attrs)

    def add_retry(self, notice: RetryNotice) -> None:
        attrs: dict[str, Any] = {
            "dive.retry.attempt": notice.attempt,
            "error.type": notice.error_type,
            "dive.retry.delay_s": notice.delay,
            "exception.message": redact(notice.message)[:1000],
        }
        if notice.status is not None:
            attrs["http.response.status_code"] = notice.status
        self._span.add_event("dive.provider.retry", attrs)

    def end(self, error: BaseException | None = None) -> None:
        attrs = dict(self._attrs)
        if error is not None:
            _fail(self._span, error)
            attrs["error.type"] = type(error).__name__
        self._inst.duration.record(time.monotonic() - self._start, attrs)
        self._span.end()
        self._current.leave()


class _ToolSpan:
    def __init__(self, span: Span, name: str, inst: Instruments, capture: bool) -> None:
        self._span, self._inst, self._name, self._capture = span, inst, name, capture
        self._current = _Current(span)
        self._start = time.monotonic()
        self._outcome = "success"

    def set_result(self, result: ToolResult) -> None:
        if self._capture:
            self._span.set_attribute("gen_ai.tool.call.result", _content(result.text))
        if result.is_error:
            self._outcome = "error"
            self._span.set_attribute("dive.tool.is_error", True)

    def end(self, error: BaseException | None = None) -> None:
        if error is not None:
            _fail(self._span, error)
            self._outcome = "exception"
        attrs = {
            **self._inst.base,
            "gen_ai.tool.name": self._name,
            "dive.tool.outcome": self._outcome,
        }
        self._inst.tool_calls.add(1, attrs)
        self._inst.tool_duration.record(time.monotonic() - self._start, attrs)
        self._span.end()
        self._current.leave()


class OTelTracer:
    """Send dive's spans and metrics to OpenTelemetry.

    Args:
        tracer_provider: where spans go (default: the global provider).
        meter_provider: where metrics go (default: the global provider).
        capture_content: also record messages, tool arguments and results (redacted,
            64 KiB each); off by default.
    """

    def __init__(
        self,
        *,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        capture_content: bool = False,
    ) -> None:
        self._tracer = trace.get_tracer("dive", tracer_provider=tracer_provider)
        self._inst = Instruments(meter_provider)
        self._capture = capture_content

    def _parent(self) -> Any:
        run = _RUN.get()
        return trace.set_span_in_context(run) if run is not None else None

    def start_agent_run(self, info: AgentRunInfo) -> AgentRunSpan:
        name = info.agent_name or info.model
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": info.provider,
            "gen_ai.request.model": info.model,
            "dive.turn.id": info.turn_id,
        }
        if info.agent_name:
            attrs["gen_ai.agent.name"] = info.agent_name
        if info.agent_id:
            attrs["gen_ai.agent.id"] = info.agent_id
        if info.session_id:
            attrs["gen_ai.conversation.id"] = info.session_id
        attrs.update(info.attributes)  # dive.parent_turn.id on a subagent's run, and the like
        previous = _RUN.get()  # an agent run from inside a tool nests under the outer run
        span = self._tracer.start_span(
            f"invoke_agent {name}", context=self._parent(), kind=SpanKind.INTERNAL, attributes=attrs
        )
        _RUN.set(span)
        return _RunSpan(span, previous, self._inst)

    def start_chat(self, info: ChatInfo) -> ChatSpan:
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": info.provider,
            "gen_ai.request.model": info.model,
            "dive.streaming": info.streaming,
        }
        s = info.settings
        if s.max_tokens is not None:
            attrs["gen_ai.request.max_tokens"] = s.max_tokens
        if s.temperature is not None:
            attrs["gen_ai.request.temperature"] = s.temperature
        if self._capture:
            attrs["gen_ai.input.messages"] = _content(list(info.messages))
        span = self._tracer.start_span(
            f"chat {info.model}", context=self._parent(), kind=SpanKind.CLIENT, attributes=attrs
        )
        return _ChatSpan(span, info.model, info.provider, self._inst, self._capture)

    def start_tool_call(self, info: ToolCallInfo) -> ToolSpan:
        call = info.call
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
            "dive.tool.origin": info.origin,
        }
        if info.effect:
            attrs["dive.tool.effect"] = info.effect
        if info.tags:
            attrs["dive.tool.tags"] = list(info.tags)
        if info.risk:
            attrs["dive.tool.risk"] = info.risk
        if self._capture:
            attrs["gen_ai.tool.call.arguments"] = _content(call.arguments)
        span = self._tracer.start_span(
            f"execute_tool {call.name}",
            context=self._parent(),
            kind=SpanKind.INTERNAL,
            attributes=attrs,
        )
        return _ToolSpan(span, call.name, self._inst, self._capture)
