"""``GeminiModel``: Gemini API and Vertex AI through the official ``google-genai`` SDK.

Streams by default through the shared retry loop (retries only inside the retry window);
vendor errors become ``ProviderError`` subclasses. Finish reasons are kept raw (``SAFETY``,
``RECITATION``, ``MALFORMED_FUNCTION_CALL``, …) and classified by ``classify_stop_reason``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any, cast

import google.genai as genai
from google.genai import errors as genai_errors
from google.genai import types
from pydantic import ValidationError

from dive.errors import (
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
    ModelSettings,
    PricingInfo,
    SignatureDelta,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    cost_of,
)
from dive.messages import ProviderState, TextBlock, ThinkingBlock, ToolCall
from dive.providers._calls import generate_with_retry, stream_with_retry
from dive.providers._credentials import LazyClient, resolve
from dive.providers._retry import (
    RetryPolicy,
    connect_error,
    request_url,
    retry_after,
    status_class,
    status_retryable,
    transport_errors,
)
from dive.providers.google._config import WarnOnce, build_config, check_settings
from dive.providers.google._contents import build_contents
from dive.providers.google._mapping import (
    LABEL,
    METADATA_KEYS,
    PartMapper,
    dumps_args,
    map_response,
    map_usage,
    metadata_blocks,
)
from dive.providers.google._settings import GeminiSettings
from dive.redaction import register_secret

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


def _gemini_client(api_key: str | None, base_url: str | None, vertexai: bool) -> Any:
    """A ``google.genai.Client`` from what was given and the environment, read now."""
    creds = resolve(
        title="Gemini",
        api_key=api_key,
        key_envs=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        base_url=base_url,
        base_envs=("GEMINI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"),
        key_required=not vertexai,
        alternatives="; or use vertexai=True",
    )
    register_secret(creds.key)
    url = creds.base_url
    options = types.HttpOptions(base_url=url, retry_options=None) if url else None
    key = creds.key or (None if vertexai else "unused")
    return genai.Client(api_key=key, vertexai=vertexai or None, http_options=options)


def _dump(obj: Any) -> Json:
    if isinstance(obj, dict):
        return cast("Json", obj)
    return cast("Json", obj.model_dump(mode="json", exclude_none=True))


def _text_kind(part: Json) -> str | None:
    """``thought`` or ``text`` for the parts that stream into one open block, else None."""
    if part.get("thought"):
        return "thought"
    if set(part) - {"thought_signature"} <= {"text"}:
        return "text"
    return None


class _StreamMapper:
    """Gemini stream chunks → dive stream events.

    Consecutive text (or thought) parts stream into one block; any other part closes it and
    is a whole block of its own (a call's arguments as one input delta). The candidate's
    metadata (grounding, citations, URL context) becomes blocks at the end.
    """

    def __init__(self, model: GeminiModel) -> None:
        self.model = model
        self.started = False
        self.parts = PartMapper()
        self.next_index = 0
        self.current: tuple[str, int] | None = None  # the open text or thought block
        self.finish_reason: str | None = None
        self.usage: Json = {}
        self.metadata: Json = {}

    def _start(self, block: Any) -> tuple[int, StreamEvent]:
        index = self.next_index
        self.next_index += 1
        return index, ContentBlockStart(index=index, block=block)

    def _close(self) -> list[StreamEvent]:
        if self.current is None:
            return []
        index = self.current[1]
        self.current = None
        return [ContentBlockStop(index=index)]

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
            self.metadata.update({k: cand[k] for k in METADATA_KEYS if cand.get(k)})
            if cand.get("finish_reason"):
                self.finish_reason = str(cand["finish_reason"])
        return out

    def _part(self, part: Json) -> list[StreamEvent]:
        kind = _text_kind(part)
        continuing = self.current is not None and self.current[0] == kind
        at = self.current[1] if continuing and self.current else self.next_index
        block = self.parts.block(part, at)
        if block is None:
            return []
        if isinstance(block, ThinkingBlock | TextBlock):
            return self._text(block, continuing)
        out = self._close()
        if isinstance(block, ToolCall):
            index, ev = self._start(replace(block, arguments={}))
            delta = InputJSONDelta(partial_json=dumps_args(dict(block.arguments)))
            out += [ev, ContentBlockDelta(index=index, delta=delta)]
        else:
            index, ev = self._start(block)
            out.append(ev)
        out.append(ContentBlockStop(index=index))
        return out

    def _text(self, block: ThinkingBlock | TextBlock, continuing: bool) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        if not continuing or self.current is None:
            out += self._close()
            thought = isinstance(block, ThinkingBlock)
            empty = ThinkingBlock(thinking="", provider=LABEL) if thought else TextBlock(text="")
            index, ev = self._start(empty)
            out.append(ev)
            self.current = ("thought" if thought else "text", index)
        index = self.current[1]
        if isinstance(block, ThinkingBlock):
            if block.thinking:
                out.append(
                    ContentBlockDelta(index=index, delta=ThinkingDelta(thinking=block.thinking))
                )
            if block.signature:
                out.append(
                    ContentBlockDelta(index=index, delta=SignatureDelta(signature=block.signature))
                )
        elif block.text:
            out.append(ContentBlockDelta(index=index, delta=TextDelta(text=block.text)))
        return out

    def finish_events(self) -> list[StreamEvent]:
        if self.finish_reason is None:
            err = StreamInterruptedError(
                f"{LABEL}: the stream ended without a finish reason", provider=LABEL
            )
            err.retryable = True  # nothing may have been delivered: the loop decides
            raise err
        out = self._close()
        for block in metadata_blocks(self.metadata):
            index, ev = self._start(block)
            out += [ev, ContentBlockStop(index=index)]
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
    """A Gemini model. ``GeminiModel("gemini-2.5-flash")`` reads ``GEMINI_API_KEY``.

    Args:
        model: the model id (``gemini-2.5-flash``, ``gemini-3-pro-preview``…); its family
            decides how thinking settings map (``thinkingBudget`` or ``thinkingLevel``) and
            which ones it refuses.
        client: a ready ``google.genai.Client`` (then ``api_key``, ``base_url`` and
            ``vertexai`` are not used).
        api_key: the API key (default: ``GEMINI_API_KEY``, then ``GOOGLE_API_KEY``).
        base_url: another endpoint (a proxy, a local simulator).
        vertexai: use Vertex AI (credentials from the environment) instead of the Gemini API.
        retry: the retry policy (default ``RetryPolicy()``).
        streaming: stream responses (``streamGenerateContent``) or not.
        pricing: prices that replace the ``genai-prices`` ones.
        settings: Gemini-specific request settings (safety settings, function calling mode
            and allowed names, Gemini's own tools, extra config fields).

    Nothing is read or checked when the model is built: the client is made at the first
    request, from ``api_key`` (or ``GEMINI_API_KEY``, ``GOOGLE_API_KEY``) and ``base_url``
    (or ``GEMINI_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``); a base URL alone needs no key.

    Raises:
        MissingCredentialsError: at the first request, when no API key was given or found
            (and neither ``client``, a base URL nor ``vertexai``).
    """

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
        settings: GeminiSettings | None = None,
    ) -> None:
        register_secret(api_key)  # error texts never echo it

        def build() -> Any:
            return _gemini_client(api_key, base_url, vertexai)

        self._clients = LazyClient(build, client)
        if client is not None:
            inner = getattr(client, "_api_client", None)  # where google-genai keeps the key
            register_secret(getattr(inner, "api_key", None))
        self._model = model
        self.retry = retry or RetryPolicy()
        self._streaming = streaming
        self.pricing = pricing
        self.settings = settings or GeminiSettings()
        self._warn = WarnOnce()

    @property
    def _client(self) -> Any:
        """The SDK client, built at the first request (credentials are read then)."""
        return self._clients.get()

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

    def check_settings(self, settings: ModelSettings) -> None:
        """Refuse settings this model cannot honour (``UnsupportedSettingError``)."""
        check_settings(settings, self._model, warn=self._warn)

    def _args(self, request: ModelRequest) -> Json:
        """The SDK call's arguments; every local refusal is a ``UserError``."""
        contents, extra = build_contents(request.messages, model=self._model)
        fields = build_config(
            request, extra, model=self._model, gemini=self.settings, warn=self._warn
        )
        try:
            config = types.GenerateContentConfig.model_validate(fields)
            wire = [types.Content.model_validate(c) for c in contents]
        except ValidationError as exc:
            raise UserError(
                f"google-genai refused the request before sending it (check "
                f"GeminiSettings.extra_config and the message content): {exc}"
            ) from exc
        return {"model": self._model, "contents": wire, "config": config}

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
        client = self._client

        async def create() -> Any:
            return await client.aio.models.generate_content(**args)

        raw = await generate_with_retry(create, translate, self.retry)
        response = map_response(_dump(raw), self._model)
        return replace(response, usage=response.usage.with_cost(self._cost(response.usage)))

    async def aclose(self) -> None:
        """Close the SDK client, if a request ever built it."""
        client = self._clients.built
        close = None if client is None else getattr(client.aio, "aclose", None)
        if close is not None:
            await close()

    def __repr__(self) -> str:
        return f"GeminiModel({self._model!r})"
