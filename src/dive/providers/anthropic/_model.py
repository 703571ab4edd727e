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
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import anthropic

from dive.errors import (
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
from dive.providers._credentials import LazyClient, resolve
from dive.providers._mcp import remote_servers
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

    Nothing is read or checked when the model is built: its client is made at the first
    request, from ``api_key`` or ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``) and
    ``base_url`` or ``ANTHROPIC_BASE_URL``; a base URL alone needs no key.

    Args:
        model: the model id (``claude-sonnet-4-6``, ...); its family decides which settings
            are sent.
        client: a ready SDK client (``AsyncAnthropic``, ``AsyncAnthropicVertex``,
            ``AsyncAnthropicBedrock``; then ``api_key``, ``base_url`` and ``timeout`` are not
            used); its own retries are turned off.
        api_key: the API key (default: ``ANTHROPIC_API_KEY`` at the first request).
        base_url: another endpoint (a proxy, a gateway, a local simulator; default:
            ``ANTHROPIC_BASE_URL``, then the API).
        retry: the retry policy (default ``RetryPolicy()``); the SDK's own retries are off.
        streaming: stream responses or not.
        pricing: prices that replace the ``genai-prices`` ones.
        timeout: seconds for one request (the SDK's default when None).

    Raises:
        MissingCredentialsError: at the first request, when neither a key, a token nor a
            base URL is set.
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
        register_secret(api_key)  # error texts never echo it

        def build() -> Any:
            return _first_party(api_key, base_url, timeout)

        self._setup(model, build, client, "anthropic", retry, streaming, pricing)

    def _setup(
        self,
        model: str,
        build: Callable[[], Any],
        client: Any,
        label: str,
        retry: RetryPolicy | None,
        streaming: bool,
        pricing: PricingInfo | None,
    ) -> None:
        """What every Anthropic model keeps: the lazily built client and the call options."""
        if client is not None:
            client = client.with_options(max_retries=0)
            register_secret(getattr(client, "api_key", None))
            label = _label_of(client)
        self._clients = LazyClient(build, client)
        self._model = model
        self._label = label
        self.retry = retry or RetryPolicy()
        self._streaming = streaming
        self.pricing = pricing
        self._warn = WarnOnce()  # settings warnings: once per model, not per request
        self._caps = capabilities_for(model)  # corrected by the API's known 400s (_fallback)

    @property
    def _client(self) -> Any:
        """The SDK client, built at the first request (credentials are read then)."""
        return self._clients.get()

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

        api = _messages_api(client, kwargs)

        async def open_stream() -> Any:
            return await api.create(**kwargs, stream=True)

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
        api = _messages_api(self._client, kwargs)

        async def create() -> Any:
            return await api.create(**kwargs)

        raw = await generate_with_retry(create, self._translate, self.retry)
        response = map_response(to_dict(raw), self._label, self._model)
        cost = cost_of(
            response.usage, provider="anthropic", model=self._model, override=self.pricing
        )
        return replace(response, usage=response.usage.with_cost(cost))

    def check_settings(self, settings: ModelSettings) -> None:
        """Refuse what the Messages API rejects: thinking with a forced tool, bad MCP servers."""
        check_settings(settings)
        remote_servers(settings)

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
        if self._label == "aws.bedrock":
            raise UnsupportedSettingError(
                "Claude on Bedrock has no token counting; count tokens with a first-party "
                "anthropic.AsyncAnthropic client (or Vertex AI) instead"
            )
        body = build_request(request, self._model, self._label, warn=self._warn, caps=self._caps)
        messages_api = _messages_api(self._client, body)
        if not hasattr(messages_api, "count_tokens"):
            raise UnsupportedSettingError(
                f"{type(self._client).__name__} has no count_tokens; count tokens with a "
                "first-party anthropic.AsyncAnthropic client instead"
            )
        kwargs = {k: v for k, v in body.items() if k in _COUNT_PARAMS}

        async def count() -> Any:
            return await messages_api.count_tokens(**kwargs)

        raw = await generate_with_retry(count, self._translate, self.retry)
        return int(to_dict(raw)["input_tokens"])

    async def aclose(self) -> None:
        """Close the SDK client (its HTTP connections), if a request ever built it."""
        client = self._clients.built
        if client is not None:
            await client.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._model!r})"


_SDK_PARAMS = frozenset(
    {
        "max_tokens",
        "mcp_servers",
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
        "mcp_servers",
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


def _messages_api(client: Any, body: dict[str, Any]) -> Any:
    """``client.beta.messages`` when the body has MCP servers (a beta parameter), else not."""
    return client.beta.messages if "mcp_servers" in body else client.messages


def _first_party(api_key: str | None, base_url: str | None, timeout: float | None) -> Any:
    """An ``AsyncAnthropic`` client from what was given and the environment, read now."""
    token = os.environ.get("ANTHROPIC_AUTH_TOKEN")
    creds = resolve(
        title="Anthropic",
        api_key=api_key,
        key_envs=("ANTHROPIC_API_KEY",),
        base_url=base_url,
        base_envs=("ANTHROPIC_BASE_URL",),
        key_required=not token,
        alternatives="; or set ANTHROPIC_AUTH_TOKEN",
    )
    register_secret(creds.key)
    key = creds.key or (None if token else "unused")
    options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    return anthropic.AsyncAnthropic(api_key=key, base_url=creds.base_url, max_retries=0, **options)


def _user_error(exc: BaseException) -> UserError | None:
    if isinstance(exc, ValueError) and "Streaming is required" in str(exc):
        return UserError(
            f"the Anthropic SDK refuses this non-streaming request ({exc}); use streaming=True"
        )
    return None
