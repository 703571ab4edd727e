"""The retry loop every provider shares, with the retry window.

``stream_with_retry`` opens a stream, maps raw events, holds ``message_start`` and ``ping``
back until the first content event, and retries a failed attempt only while nothing but those
had been produced — so output is never duplicated. ``generate_with_retry`` does the same for a
single response. Failures come out as ``ProviderError`` subclasses (or the ``UserError`` a
provider raised for a request it refuses to send), with any secret the provider echoed
redacted from them and from the vendor exception chained as their cause.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, Protocol, TypeVar

from dive.errors import ProviderError, UserError
from dive.llm import MessageStart, Ping, RetryNotice, StreamEvent, report_retry
from dive.providers._retry import RetryPolicy
from dive.redaction import redact_exception

__all__ = ["Mapper", "generate_with_retry", "stream_with_retry"]

T = TypeVar("T")

Translate = Callable[[BaseException], "ProviderError | UserError"]


def _redacted(err: ProviderError | UserError, exc: BaseException) -> ProviderError | UserError:
    """``err`` and the vendor exception it is raised from, with secrets redacted in place.

    A provider may echo the key in its error ("invalid x-api-key: …"); the vendor exception
    stays chained as ``__cause__``, so its text is redacted too.
    """
    redact_exception(exc)
    redact_exception(err)
    return err


async def _close(stream: Any) -> None:
    close = getattr(stream, "close", None)
    if close is not None:
        out = close()
        if asyncio.iscoroutine(out):
            await out


async def _pause(attempt: int, err: ProviderError, retry: RetryPolicy) -> None:
    """Report the failed attempt to the run's observer, then wait out the backoff."""
    delay = retry.delay(attempt, err)
    report_retry(
        RetryNotice(
            attempt=attempt + 1,
            error_type=type(err).__name__,
            message=str(err),
            status=err.status,
            delay=delay,
        )
    )
    await asyncio.sleep(delay)


class Mapper(Protocol):
    """Maps one attempt's raw stream items to dive stream events."""

    def feed(self, raw: Any) -> Iterable[StreamEvent]:
        """Events for one raw stream item."""
        ...

    def finish(self) -> Iterable[StreamEvent]:
        """Events once the raw stream ended (may raise ``StreamInterruptedError``)."""
        ...


async def stream_with_retry(
    open_stream: Callable[[], Awaitable[Any]],
    new_mapper: Callable[[], Mapper],
    translate: Translate,
    retry: RetryPolicy,
) -> AsyncIterator[StreamEvent]:
    """Yield mapped events; retry failed attempts inside the retry window."""
    attempt = 0
    while True:
        mapper = new_mapper()
        held: list[StreamEvent] = []
        delivered = False
        try:
            stream = await open_stream()
            try:
                async for raw in stream:
                    for event in mapper.feed(raw):
                        if not delivered and isinstance(event, MessageStart | Ping):
                            held.append(event)
                            continue
                        if not delivered:
                            delivered = True
                            for h in held:
                                yield h
                        yield event
            finally:
                await _close(stream)
            closing = list(mapper.finish())
            if not delivered:
                for h in held:
                    yield h
            for event in closing:
                yield event
            return
        except Exception as exc:
            err = translate(exc)
            if delivered or isinstance(err, UserError) or not retry.should_retry(attempt, err):
                raise _redacted(err, exc) from exc
            await _pause(attempt, err, retry)
            attempt += 1


async def generate_with_retry(
    create: Callable[[], Awaitable[T]], translate: Translate, retry: RetryPolicy
) -> T:
    """Call ``create`` with retries; raise the translated error when giving up."""
    attempt = 0
    while True:
        try:
            return await create()
        except Exception as exc:
            err = translate(exc)
            if isinstance(err, UserError) or not retry.should_retry(attempt, err):
                raise _redacted(err, exc) from exc
            await _pause(attempt, err, retry)
            attempt += 1
