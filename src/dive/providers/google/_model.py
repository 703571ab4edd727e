"""``GeminiModel``: Gemini API and Vertex AI through the official ``google-genai`` SDK.

Streams by default through the shared retry loop (retries only inside the retry window);
vendor errors become ``ProviderError`` subclasses. Finish reasons are kept raw (``SAFETY``,
``RECITATION``, ``MALFORMED_FUNCTION_CALL``, …) and classified by ``classify_stop_reason``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any, cast

import google.genai as genai
from google.genai import errors as genai_errors
from google.genai import types

from dive.errors import (
    MissingCredentialsError,
    ProviderConnectionError,
    ProviderError,
    ProviderTimeoutError,
    StreamInterruptedError,
    UserError,
)
from dive.llm import (
    ContentBlockDelta,
    ContentBlockStart,
    ContentBlockStop,
    InputJSONDelta,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelRequest,
    ModelResponse,
    PricingInfo,
    SignatureDelta,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    cost_of,
)
from dive.messages import ProviderState, TextBlock, ThinkingBlock, ToolCall
from dive.providers._calls import generate_with_retry, stream_with_retry
from dive.providers._retry import (
    RetryPolicy,
    connect_error,
    request_url,
    retry_after,
    status_class,
    status_retryable,
    transport_errors,
)
from dive.providers.google._mapping import (
    LABEL,
    PartMapper,
    build_config,
    build_contents,
    dumps_args,
    map_response,
    map_usage,
)

__all__ = ["GeminiModel"]

Json = dict[str, Any]
_TRANSPORT = transport_errors()


def _timeout_errors() -> tuple[type[BaseException], ...]:
    try:
        from httpx2 import TimeoutException
    except ImportError:  # pragma: no cover - depends on the SDK version
        return ()
    return (TimeoutException,)


_TIMEOUTS = _timeout_errors()
_BASE_URL_ENV = "GEMINI_BASE_URL / GOOGLE_GEMINI_BASE_URL"


def translate(exc: BaseException) -> ProviderError | UserError:
    """google-genai exceptions → dive's error tree (the shared status and retry rules)."""
    if isinstance(exc, ProviderError | UserError):
        return exc
    if isinstance(exc, genai_errors.APIError):
        api: Any = exc
        code = int(api.code or 0)
        cls = status_class(code) or ProviderError
        response: Any = api.response
        headers = getattr(response, "headers", None)
        err = cls(
            f"{LABEL} returned {code} {api.status}: {api.message}",
            provider=LABEL,
            status=code,
            error_type=str(api.status) if api.status else None,
            body=api.details,
            retry_after=retry_after(headers),
        )
        err.retryable = status_retryable(code, headers)
        return err
    refused = connect_error(exc, LABEL, request_url(exc, LABEL), _BASE_URL_ENV)
    if refused is not None:
        return refused
    if isinstance(exc, (TimeoutError, *_TIMEOUTS)):
        late = ProviderTimeoutError(f"{LABEL}: request timed out: {exc!r}", provider=LABEL)
        late.retryable = True
        return late
    if isinstance(exc, _TRANSPORT):
        conn = ProviderConnectionError(f"{LABEL}: connection failed: {exc!r}", provider=LABEL)
        conn.retryable = True
        return conn
    return StreamInterruptedError(f"{LABEL}: the stream failed: {exc!r}", provider=LABEL)


def _dump(obj: Any) -> Json:
    if isinstance(obj, dict):
        return cast("Json", obj)
    return cast("Json", obj.model_dump(mode="json", exclude_none=True))


class _StreamMapper:
    """Gemini stream chunks → dive stream events."""

    def __init__(self, model: GeminiModel) -> None:
        self.model = model
        self.started = False
        self.parts = PartMapper()
        self.next_index = 0
        self.text: int | None = None
        self.thinking: int | None = None
        self.open: list[int] = []
        self.finish_reason: str | None = None
        self.usage: Json = {}
        self.ended = False

    def _start(self, block: Any) -> tuple[int, StreamEvent]:
        index = self.next_index
        self.next_index += 1
        self.open.append(index)
        return index, ContentBlockStart(index=index, block=block)

    def feed(self, raw: Any) -> list[StreamEvent]:
        chunk = _dump(raw)
        out: list[StreamEvent] = []
        if not self.started:
            self.started = True
            out.append(MessageStart(id=chunk.get("response_id"), model=chunk.get("model_version")))
        if chunk.get("usage_metadata"):
            self.usage = cast("Json", chunk["usage_metadata"])
        candidates = cast("list[Json]", chunk.get("candidates") or [])
        if not candidates and chunk.get("prompt_feedback"):
            feedback = cast("Json", chunk["prompt_feedback"])
            self.finish_reason = str(feedback.get("block_reason") or "OTHER")
        for cand in candidates[:1]:
            content = cast("Json", cand.get("content") or {})
            for part in content.get("parts") or ():
                out.extend(self._part(cast("Json", part)))
            if cand.get("finish_reason"):
                self.finish_reason = str(cand["finish_reason"])
        return out

    def _part(self, part: Json) -> list[StreamEvent]:
        at = self.text if self.text is not None and "function_call" not in part else self.next_index
        block = self.parts.block(part, at)
        out: list[StreamEvent] = []
        if isinstance(block, ToolCall):
            index, ev = self._start(replace(block, arguments={}))
            out += [
                ev,
                ContentBlockDelta(
                    index=index,
                    delta=InputJSONDelta(partial_json=dumps_args(dict(block.arguments))),
                ),
            ]
            out.append(ContentBlockStop(index=index))
            self.open.remove(index)
        elif isinstance(block, ThinkingBlock):
            if self.thinking is None:
                self.thinking, ev = self._start(ThinkingBlock(thinking="", provider=LABEL))
                out.append(ev)
            out.append(
                ContentBlockDelta(index=self.thinking, delta=ThinkingDelta(thinking=block.thinking))
            )
            if block.signature:
                out.append(
                    ContentBlockDelta(
                        index=self.thinking, delta=SignatureDelta(signature=block.signature)
                    )
                )
        elif isinstance(block, TextBlock):
            if self.text is None:
                self.text, ev = self._start(TextBlock(text=""))
                out.append(ev)
            out.append(ContentBlockDelta(index=self.text, delta=TextDelta(text=block.text)))
        return out

    def finish_events(self) -> list[StreamEvent]:
        if self.finish_reason is None:
            err = StreamInterruptedError(
                f"{LABEL}: the stream ended without a finish reason", provider=LABEL
            )
            err.retryable = True  # nothing may have been delivered: the loop decides
            raise err
        out: list[StreamEvent] = [ContentBlockStop(index=i) for i in self.open]
        usage = map_usage(self.usage)
        usage = usage.with_cost(self.model._cost(usage))  # pyright: ignore[reportPrivateUsage]
        state = None
        if self.parts.signatures:
            state = ProviderState(
                provider=LABEL, api="generate_content", data=self.parts.signatures
            )
        out.append(MessageDelta(stop_reason=self.finish_reason, usage=usage, provider_state=state))
        out.append(MessageStop())
        return out


class GeminiModel:
    """A Gemini model. ``GeminiModel("gemini-2.5-flash")`` reads ``GEMINI_API_KEY``."""

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        vertexai: bool = False,
        retry: RetryPolicy | None = None,
        streaming: bool = True,
        pricing: PricingInfo | None = None,
    ) -> None:
        if client is None:
            key = api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
            if not key and not vertexai:
                raise MissingCredentialsError(
                    "no Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY), or pass api_key="
                )
            options = types.HttpOptions(base_url=base_url, retry_options=None) if base_url else None
            client = genai.Client(api_key=key, vertexai=vertexai or None, http_options=options)
        self._client: Any = client
        self._model = model
        self.retry = retry or RetryPolicy()
        self._streaming = streaming
        self.pricing = pricing

    @property
    def name(self) -> str:
        return self._model

    @property
    def provider(self) -> str:
        return LABEL

    @property
    def supports_streaming(self) -> bool:
        return self._streaming

    def _cost(self, usage: Any) -> float | None:
        return cost_of(usage, provider="google", model=self._model, override=self.pricing)

    def _args(self, request: ModelRequest) -> Json:
        contents, extra = build_contents(request.messages)
        config = types.GenerateContentConfig.model_validate(build_config(request, extra))
        return {
            "model": self._model,
            "contents": [types.Content.model_validate(c) for c in contents],
            "config": config,
        }

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        args = self._args(request)
        client = self._client
        model = self

        class _Mapper(_StreamMapper):
            def __init__(self) -> None:
                super().__init__(model)

            def finish(self) -> list[StreamEvent]:
                return self.finish_events()

        async def open_stream() -> Any:
            return await client.aio.models.generate_content_stream(**args)

        async for event in stream_with_retry(open_stream, _Mapper, translate, self.retry):
            yield event

    async def generate(self, request: ModelRequest) -> ModelResponse:
        args = self._args(request)

        async def create() -> Any:
            return await self._client.aio.models.generate_content(**args)

        raw = await generate_with_retry(create, translate, self.retry)
        response = map_response(_dump(raw), self._model)
        return replace(response, usage=response.usage.with_cost(self._cost(response.usage)))

    async def aclose(self) -> None:
        """Close the SDK client."""
        close = getattr(self._client.aio, "aclose", None)
        if close is not None:
            await close()

    def __repr__(self) -> str:
        return f"GeminiModel({self._model!r})"
