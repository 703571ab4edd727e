"""One model call: stream (or generate), accumulate, and report failures honestly.

A failure is wrapped in :class:`ModelCallError` recording whether a content event had
already reached the consumer: that decides ``stream_interrupted`` versus ``provider_error``.
"""

from __future__ import annotations

import time

from dive.agent._events import ModelStreamEvent
from dive.agent._run import Run
from dive.errors import DiveError, EventHandlerError, StreamInterruptedError, UserError
from dive.llm import ModelRequest, ModelResponse, ResponseAccumulator, Usage, observe_retries
from dive.redaction import redact_exception
from dive.tracing import ChatInfo

__all__ = ["ModelCallError", "call_model"]


class ModelCallError(DiveError):
    """A model call failed; ``content_started`` says whether content had been delivered."""

    def __init__(self, cause: BaseException, *, content_started: bool) -> None:
        super().__init__(str(cause) or repr(cause))
        self.cause = cause
        self.content_started = content_started


async def _stream(
    run: Run, request: ModelRequest, acc: ResponseAccumulator, first: list[float]
) -> ModelResponse:
    """Stream into ``acc``; ``first`` receives the monotonic time of the first event."""
    add = acc.add
    model = run.setup.model
    events = aiter(model.stream(request))
    deliver = run.events.deliver if run.events.listening else None
    event = await anext(events, None)  # the first event apart: its time is the first chunk's
    if event is not None:
        first.append(time.monotonic())
        add(event)
        if deliver is not None:
            await deliver(ModelStreamEvent(event=event))
    if deliver is None:  # raw deltas go only to a listener; nothing else needs them
        async for event in events:
            add(event)
        return acc.response()
    async for event in events:
        add(event)
        await deliver(ModelStreamEvent(event=event))
    return acc.response()


async def call_model(run: Run, request: ModelRequest, iteration: int) -> ModelResponse:
    """Call the model; raises ``ModelCallError`` (or ``EventHandlerError``) on failure."""
    model = run.setup.model
    acc = ResponseAccumulator(model.name)
    run.state.stream_started(acc)
    config = run.config
    span = None
    if config.traced:
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
    started = time.monotonic()
    first: list[float] = []
    try:
        with observe_retries(None if span is None else getattr(span, "add_retry", None)):
            if model.supports_streaming:
                response = await _stream(run, request, acc, first)
            else:
                response = await model.generate(request)
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
        cause = exc
        if isinstance(exc, StreamInterruptedError) and not acc.content_started:
            cause = exc
        raise ModelCallError(cause, content_started=acc.content_started) from exc
    except BaseException as exc:
        _account_partial(run, acc)
        if span is not None:
            span.end(exc)
        raise
    if span is not None:
        span.set_time_to_first_chunk((first[0] if first else time.monotonic()) - started)
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
