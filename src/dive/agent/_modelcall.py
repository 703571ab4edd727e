"""One model call: stream (or generate), accumulate, and report failures honestly.

A failure is wrapped in :class:`ModelCallError` recording whether a content event had
already reached the consumer: that decides ``stream_interrupted`` versus ``provider_error``.
"""

from __future__ import annotations

from dive.agent._events import ModelStreamEvent
from dive.agent._run import Run
from dive.agent._runner import Deliver, ModelCall
from dive.errors import DiveError, EventHandlerError, UserError
from dive.llm import (
    ModelRequest,
    ModelResponse,
    ResponseAccumulator,
    StreamEvent,
    Usage,
    observe_retries,
)
from dive.redaction import redact_exception
from dive.tracing import ChatInfo

__all__ = ["ModelCallError", "call_model"]


class ModelCallError(DiveError):
    """A model call failed; ``content_started`` says whether content had been delivered."""

    def __init__(self, cause: BaseException, *, content_started: bool) -> None:
        super().__init__(str(cause) or repr(cause))
        self.cause = cause
        self.content_started = content_started


def _deliverer(run: Run, first: list[float] | None) -> Deliver | None:
    """What receives each stream event: the run's listener, and the first-chunk clock."""
    events = run.events
    deliver = events.deliver if events.listening else None
    if first is None:
        assert deliver is not None

        async def to_listener(event: StreamEvent) -> None:
            await deliver(ModelStreamEvent(event=event))

        return to_listener
    clock = run.runner.monotonic

    async def timed(event: StreamEvent) -> None:
        if not first:
            first.append(clock())
        if deliver is not None:
            await deliver(ModelStreamEvent(event=event))

    return timed


async def call_model(run: Run, request: ModelRequest, iteration: int) -> ModelResponse:
    """Call the model; raises ``ModelCallError`` (or ``EventHandlerError``) on failure."""
    model = run.setup.model
    acc = ResponseAccumulator(model.name)
    run.state.stream_started(acc)
    config = run.config
    runner = run.runner
    span = None
    first: list[float] | None = None
    if config.traced:
        first = []
        span = config.tracer.start_chat(
            ChatInfo(
                model=model.name,
                provider=model.provider,
                streaming=model.supports_streaming,
                settings=request.settings,
                messages=request.messages,
                iteration=iteration,
            )
        )
    started = runner.monotonic() if span is not None else 0.0
    call = ModelCall(ref=run.ref(), model=model, request=request)
    deliver = _deliverer(run, first) if span is not None or run.events.listening else None
    try:
        # an untraced call still opens a scope: a retry never reaches another call's observer
        with observe_retries(None if span is None else getattr(span, "add_retry", None)):
            response = await runner.call_model(call, acc, deliver)
    except (EventHandlerError, UserError) as exc:  # the handler's failure, or a refused request
        _account_partial(run, acc)
        if span is not None:
            span.end(exc)
        raise
    except Exception as exc:
        _account_partial(run, acc)
        redact_exception(exc)
        if span is not None:
            span.end(exc)
        raise ModelCallError(exc, content_started=acc.content_started) from exc
    except BaseException as exc:
        _account_partial(run, acc)
        if span is not None:
            span.end(exc)
        raise
    if span is not None:
        assert first is not None
        span.set_time_to_first_chunk((first[0] if first else runner.monotonic()) - started)
        span.set_response(response)
        span.end(None)
    run.state.response_arrived(response)
    return response


def _account_partial(run: Run, acc: ResponseAccumulator) -> None:
    """Count what a failed stream reported; unknown unless its usage frame had arrived."""
    state = run.state
    if acc.usage_reported and acc.usage is not None:
        state.add_usage(acc.usage)
    elif acc.id is not None or acc.content_started or acc.usage is not None:
        state.add_usage(
            acc.usage.with_known(False) if acc.usage is not None else Usage(known=False)
        )
