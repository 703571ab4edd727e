"""OpenAI models on the official ``openai`` SDK: Responses and Chat Completions.

Both stream by default through the shared retry loop (retries only inside the retry window),
with the SDK's own retries off, and translate vendor exceptions into ``ProviderError``s.
OpenAI-compatible servers (Ollama, vLLM, OpenRouter, …) use ``OpenAIChatModel`` with a base URL.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import replace
from typing import Any

import openai

from dive.errors import ProviderError, UserError
from dive.llm import (
    MessageDelta,
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
from dive.providers.openai._chat import (
    DONE,
    ChatMapper,
    chat_request,
    chat_response,
    check_chat_settings,
    sse_data,
)
from dive.providers.openai._errors import translate
from dive.providers.openai._responses import ResponsesMapper, responses_request, responses_response
from dive.providers.openai._usage import as_json
from dive.redaction import register_secret

__all__ = ["OpenAIChatModel", "OpenAIResponsesModel"]

_PARAMS_CACHE: dict[str, frozenset[str]] = {}


def _dump(obj: Any) -> dict[str, Any]:
    return as_json(obj)


class _OpenAIBase:
    """Client construction, pricing and the shared call plumbing.

    Nothing is read or checked when the model is built: the client is made at the first
    request, from ``api_key`` or ``key_env`` and ``base_url`` or ``<PROVIDER>_BASE_URL``
    (``OPENAI_BASE_URL``, ``OLLAMA_BASE_URL``, …), then ``default_base_url``; a base URL given
    by argument or variable needs no key.

    Args:
        model: the model id (``gpt-5``, ``gpt-4.1``, or a compatible server's name).
        client: a ready ``openai.AsyncOpenAI`` (then ``api_key``, ``base_url`` and ``timeout``
            are not used); its own retries are turned off.
        api_key: the API key (default: the ``key_env`` variable, at the first request).
        base_url: another endpoint (a compatible server, a proxy, a local simulator; default:
            ``<PROVIDER>_BASE_URL``, then ``default_base_url``, then OpenAI's API).
        provider: the provider label (``openai``, ``ollama``, ``groq``, ...), in usage, traces
            and errors.
        key_env: the environment variable that holds the key (``OPENAI_API_KEY``).
        retry: the retry policy (default ``RetryPolicy()``); the SDK's own retries are off.
        streaming: stream responses or not.
        pricing: prices that replace the ``genai-prices`` ones.
        timeout: seconds for one request (the SDK's default when None).
        default_base_url: where a preset's server is when no base URL is set (unlike
            ``base_url``, it does not make the key optional).
        key_required: False for servers that never need a key (Ollama, vLLM, llama.cpp).

    Raises:
        MissingCredentialsError: at the first request, when a key is required and neither
            a key nor a base URL is set.
    """

    api = ""

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        provider: str = "openai",
        key_env: str = "OPENAI_API_KEY",
        retry: RetryPolicy | None = None,
        streaming: bool = True,
        pricing: PricingInfo | None = None,
        timeout: float | None = None,
        default_base_url: str | None = None,
        key_required: bool = True,
    ) -> None:
        register_secret(api_key)  # error texts never echo it

        def build() -> Any:
            creds = resolve(
                title="OpenAI" if provider == "openai" else provider,
                api_key=api_key,
                key_envs=(key_env,),
                base_url=base_url,
                base_envs=(f"{provider.upper().replace('-', '_')}_BASE_URL",),
                key_required=key_required,
            )
            register_secret(creds.key)
            return openai.AsyncOpenAI(
                api_key=creds.key or provider,
                base_url=creds.base_url or default_base_url,
                max_retries=0,
                timeout=timeout,
            )

        if client is not None:
            client = client.with_options(max_retries=0)
            register_secret(getattr(client, "api_key", None))
        self._clients = LazyClient(build, client)
        self._model = model
        self._provider = provider
        self.retry = retry or RetryPolicy()
        self._streaming = streaming
        self.pricing = pricing

    @property
    def _client(self) -> Any:
        """The SDK client, built at the first request (credentials are read then)."""
        return self._clients.get()

    @property
    def name(self) -> str:
        return self._model

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def supports_streaming(self) -> bool:
        return self._streaming

    def _translate(self, exc: BaseException) -> ProviderError | UserError:
        if isinstance(exc, UserError):
            return exc
        return translate(exc, self._provider)

    def _priced(self, event: StreamEvent) -> StreamEvent:
        if isinstance(event, MessageDelta) and event.usage is not None:
            return replace(event, usage=event.usage.with_cost(self._cost(event.usage)))
        return event

    def _cost(self, usage: Any) -> float | None:
        return cost_of(usage, provider=self._provider, model=self._model, override=self.pricing)

    async def aclose(self) -> None:
        """Close the SDK client (its HTTP connections), if a request ever built it."""
        client = self._clients.built
        if client is not None:
            await client.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._model!r})"


class OpenAIResponsesModel(_OpenAIBase):
    """An OpenAI model through the Responses API (reasoning items replayed verbatim).

    ``ModelSettings(mcp_servers=...)`` become hosted ``mcp`` tools.
    """

    api = "responses"

    def check_settings(self, settings: ModelSettings) -> None:
        """Refuse malformed ``mcp_servers`` (``UserError``) before any request."""
        remote_servers(settings)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        kwargs = responses_request(request, self._model)
        client = self._client
        provider = self._provider
        priced = self._priced

        class _Mapper(ResponsesMapper):
            def __init__(self) -> None:
                super().__init__(provider)

            def feed(self, raw: Any) -> list[StreamEvent]:
                return [priced(e) for e in super().feed(raw)]

        async def open_stream() -> Any:
            return await client.responses.create(**kwargs, stream=True)

        async for event in stream_with_retry(open_stream, _Mapper, self._translate, self.retry):
            yield event

    async def generate(self, request: ModelRequest) -> ModelResponse:
        kwargs = responses_request(request, self._model)
        client = self._client

        async def create() -> ModelResponse:  # a failed response is retried like any error
            raw = await client.responses.create(**kwargs)
            return responses_response(_dump(raw), self._model)

        response = await generate_with_retry(create, self._translate, self.retry)
        return replace(response, usage=response.usage.with_cost(self._cost(response.usage)))


class _ChatEvents:
    """The chunks of a Chat Completions stream as dicts, plus ``DONE`` for ``data: [DONE]``.

    The SDK's chunk iterator swallows ``[DONE]``, which makes a complete stream
    indistinguishable from a bare EOF; so the stream is opened through the SDK's public
    ``with_streaming_response`` and its server-sent events are read from the response's lines
    (turns.md §4). ``close`` ends the response.
    """

    def __init__(self, response: Any, stack: AsyncExitStack) -> None:
        self._response = response
        self._stack = stack

    async def __aiter__(self) -> AsyncIterator[Any]:
        async for data in sse_data(self._response.iter_lines()):
            if data.startswith("[DONE]"):
                yield DONE
                return
            if data.strip():
                yield json.loads(data)

    async def close(self) -> None:
        await self._stack.aclose()


class OpenAIChatModel(_OpenAIBase):
    """A model through Chat Completions (OpenAI, or any compatible server via ``base_url``).

    Args:
        model: the model id.
        system_role: the role the system prompt is sent with: ``system``, or ``developer`` for
            servers that want it.
        kwargs: the other arguments of the OpenAI models (``client``, ``api_key``, ``base_url``,
            ``provider``, ``key_env``, ``retry``, ``streaming``, ``pricing``, ``timeout``).
    """

    api = "chat_completions"

    def check_settings(self, settings: ModelSettings) -> None:
        """Refuse what Chat Completions cannot do (``mcp_servers``) before any request."""
        check_chat_settings(settings)

    def __init__(self, model: str, *, system_role: str = "system", **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.system_role = system_role

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        kwargs = chat_request(request, self._model, system_role=self.system_role)
        client = self._client
        provider = self._provider
        priced = self._priced

        class _Mapper(ChatMapper):
            def __init__(self) -> None:
                super().__init__(provider)

            def finish(self) -> list[StreamEvent]:
                return [priced(e) for e in super().finish()]

        async def open_stream() -> Any:
            stack = AsyncExitStack()
            opening = client.chat.completions.with_streaming_response.create(
                **kwargs, stream=True, stream_options={"include_usage": True}
            )
            response = await stack.enter_async_context(opening)  # raises for an error status
            return _ChatEvents(response, stack)

        async for event in stream_with_retry(open_stream, _Mapper, self._translate, self.retry):
            yield event

    async def generate(self, request: ModelRequest) -> ModelResponse:
        kwargs = chat_request(request, self._model, system_role=self.system_role)
        client = self._client

        async def create() -> Any:
            return await client.chat.completions.create(**kwargs)

        raw = await generate_with_retry(create, self._translate, self.retry)
        response = chat_response(_dump(raw), self._model)
        return replace(response, usage=response.usage.with_cost(self._cost(response.usage)))
