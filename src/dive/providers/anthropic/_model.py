"""``AnthropicModel``: the Messages API through the official ``anthropic`` SDK.

Streams by default (non-streaming on request); counts tokens (``count_tokens``, the optional
``dive.llm.TokenCounter`` protocol). The SDK's own retries are off; dive's
``RetryPolicy`` retries inside the retry window only — ``message_start`` and ``ping`` are held
back until the first content event, so a retried attempt never duplicates output. Vendor
exceptions become ``ProviderError`` subclasses. First-party, Vertex and Bedrock async clients
are accepted. A request refused with one of the two known 400s for a model that no longer takes
budgeted thinking or ``temperature`` is resent once with the fallback, which the model object
then keeps (``_fallback``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import anthropic

from dive.errors import (
    MissingCredentialsError,
    ProviderError,
    StreamInterruptedError,
    UnsupportedSettingError,
    UserError,
)
from dive.llm import (
    MessageDelta,
    MessageStop,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    PricingInfo,
    StreamEvent,
    cost_of,
)
from dive.providers._calls import generate_with_retry, stream_with_retry
from dive.providers._retry import RetryPolicy
from dive.providers.anthropic._capabilities import capabilities_for
from dive.providers.anthropic._errors import translate
from dive.providers.anthropic._fallback import learn
from dive.providers.anthropic._request import WarnOnce, build_request, check_settings
from dive.providers.anthropic._response import map_response, to_dict
from dive.providers.anthropic._stream import StreamMapper
from dive.redaction import register_secret

__all__ = ["AnthropicModel"]


def _label_of(client: Any) -> str:
    name = type(client).__name__.lower()
    if "vertex" in name:
        return "gcp.vertex_ai"
    if "bedrock" in name:
        return "aws.bedrock"
    return "anthropic"


class AnthropicModel:
    """A Claude model. ``AnthropicModel("claude-sonnet-4-5")`` reads ``ANTHROPIC_API_KEY``.

    Args:
        model: the model id (``claude-sonnet-4-6``, ...); its family decides which settings are
            sent.
        client: a ready ``anthropic.AsyncAnthropic`` (then ``api_key``, ``base_url`` and ``timeout``
            are not used).
        api_key: the API key (default: ``ANTHROPIC_API_KEY``).
        base_url: another endpoint (a proxy, a gateway, a local simulator).
        retry: the retry policy (default ``RetryPolicy()``); the SDK's own retries are off.
        streaming: stream responses or not.
        pricing: prices that replace the ``genai-prices`` ones.
        timeout: seconds for one request (the SDK's default when None).
    """

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
        streaming: bool = True,
        pricing: PricingInfo | None = None,
        timeout: float | None = None,
    ) -> None:
        if client is None:
            key = api_key or os.environ.get("ANTHROPIC_API_KEY")
            if not key and base_url is None:
                raise MissingCredentialsError(
                    "no Anthropic API key: set ANTHROPIC_API_KEY or pass api_key= (or client=)"
                )
            client = anthropic.AsyncAnthropic(
                api_key=key or "unused", base_url=base_url, max_retries=0, timeout=timeout
            )
        else:
            client = client.with_options(max_retries=0)
        self._client: Any = client
        register_secret(getattr(client, "api_key", None))  # error texts never echo it
        self._model = model
        self._label = _label_of(client)
        self.retry = retry or RetryPolicy()
        self._streaming = streaming
        self.pricing = pricing
        self._warn = WarnOnce()  # settings warnings: once per model, not per request
        self._caps = capabilities_for(model)  # corrected by the API's known 400s (_fallback)

    @property
    def name(self) -> str:
        return self._model

    @property
    def provider(self) -> str:
        return self._label

    @property
    def supports_streaming(self) -> bool:
        return self._streaming

    def _priced(self, event: StreamEvent) -> StreamEvent:
        if isinstance(event, MessageDelta) and event.usage is not None:
            cost = cost_of(
                event.usage, provider="anthropic", model=self._model, override=self.pricing
            )
            return replace(event, usage=event.usage.with_cost(cost))
        return event

    def _kwargs(self, request: ModelRequest) -> dict[str, Any]:
        body = build_request(request, self._model, self._label, warn=self._warn, caps=self._caps)
        return sdk_kwargs(body)

    def _learned(self, error: BaseException) -> bool:
        """Whether ``error`` is a known 400 whose fallback this model now uses (resend once)."""
        caps = learn(self._caps, error)
        if caps is not None:
            self._caps = caps
        return caps is not None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        delivered = False
        try:
            async for event in self._stream(request):
                delivered = True
                yield event
        except ProviderError as exc:
            if delivered or not self._learned(exc):
                raise
            async for event in self._stream(request):
                yield event

    async def _stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        kwargs = self._kwargs(request)
        client = self._client
        label = self._label

        async def open_stream() -> Any:
            return await client.messages.create(**kwargs, stream=True)

        model = self

        class _Mapper:
            def __init__(self) -> None:
                self.inner = StreamMapper(label)
                self.stopped = False

            def feed(self, raw: Any) -> list[StreamEvent]:
                events = self.inner.map_all(to_dict(raw))
                if any(isinstance(e, MessageStop) for e in events):
                    self.stopped = True
                return [model._priced(e) for e in events]

            def finish(self) -> list[StreamEvent]:
                if not self.stopped:
                    err = StreamInterruptedError(
                        f"{label}: the stream ended without message_stop", provider=label
                    )
                    err.retryable = True  # retried only if nothing was delivered yet
                    raise err
                return []

        async for event in stream_with_retry(open_stream, _Mapper, self._translate, self.retry):
            yield event

    def _translate(self, exc: BaseException) -> ProviderError | UserError:
        return _user_error(exc) or translate(exc, self._label)

    async def generate(self, request: ModelRequest) -> ModelResponse:
        try:
            return await self._generate(request)
        except ProviderError as exc:
            if not self._learned(exc):
                raise
            return await self._generate(request)

    async def _generate(self, request: ModelRequest) -> ModelResponse:
        kwargs = self._kwargs(request)

        async def create() -> Any:
            return await self._client.messages.create(**kwargs)

        raw = await generate_with_retry(create, self._translate, self.retry)
        response = map_response(to_dict(raw), self._label, self._model)
        cost = cost_of(
            response.usage, provider="anthropic", model=self._model, override=self.pricing
        )
        return replace(response, usage=response.usage.with_cost(cost))

    def check_settings(self, settings: ModelSettings) -> None:
        """Refuse settings the Messages API rejects together (thinking + forced tool choice)."""
        check_settings(settings)

    async def count_tokens(self, request: ModelRequest) -> int:
        """The input tokens ``request`` would use, from ``/v1/messages/count_tokens``.

        The request is mapped as for a call (system, tools, tool choice, thinking, messages);
        generation settings (``max_tokens``, sampling, stop sequences) do not apply. Retried
        like a call under ``retry``.

        Raises:
            ProviderError: the API refused the request or could not be reached.
            UnsupportedSettingError: this client (e.g. a cloud platform's) has no token
                counting.
        """
        messages_api = self._client.messages
        if not hasattr(messages_api, "count_tokens"):
            raise UnsupportedSettingError(
                f"{type(self._client).__name__} has no count_tokens; count tokens with a "
                "first-party anthropic.AsyncAnthropic client instead"
            )
        body = build_request(request, self._model, self._label, warn=self._warn, caps=self._caps)
        kwargs = {k: v for k, v in body.items() if k in _COUNT_PARAMS}

        async def count() -> Any:
            return await messages_api.count_tokens(**kwargs)

        raw = await generate_with_retry(count, self._translate, self.retry)
        return int(to_dict(raw)["input_tokens"])

    async def aclose(self) -> None:
        """Close the SDK client (its HTTP connections)."""
        await self._client.close()

    def __repr__(self) -> str:
        return f"AnthropicModel({self._model!r})"


_SDK_PARAMS = frozenset(
    {
        "max_tokens",
        "messages",
        "model",
        "metadata",
        "output_config",
        "service_tier",
        "stop_sequences",
        "system",
        "thinking",
        "tool_choice",
        "tools",
        "extra_headers",
    }
)


_COUNT_PARAMS = frozenset(
    {
        "messages",
        "model",
        "output_config",
        "system",
        "thinking",
        "tool_choice",
        "tools",
        "extra_headers",
    }
)


def sdk_kwargs(body: dict[str, Any]) -> dict[str, Any]:
    """The wire body as SDK keyword arguments.

    Fields the SDK has no parameter for (such as sampling parameters) travel in ``extra_body``.
    """
    kwargs = {k: v for k, v in body.items() if k in _SDK_PARAMS}
    extra = {k: v for k, v in body.items() if k not in _SDK_PARAMS}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def _user_error(exc: BaseException) -> UserError | None:
    if isinstance(exc, ValueError) and "Streaming is required" in str(exc):
        return UserError(
            f"the Anthropic SDK refuses this non-streaming request ({exc}); use streaming=True"
        )
    return None
