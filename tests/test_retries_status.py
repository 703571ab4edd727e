"""Which HTTP statuses are retried, the same for every provider (issue 12, item 1).

Each case goes through the official SDK against dive's local simulator: Anthropic Messages,
OpenAI Chat Completions and Responses, Gemini — streaming and not. Retried: 408, 409, 429,
500, 502, 503, 504, 529; ``x-should-retry`` wins over the status (true forces a retry, false
forbids one); 400/401/403/404 are not retried.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

import dive.testing.anthropic as anth
import dive.testing.gemini as gem
import dive.testing.openai as oai
from dive.agent import Agent
from dive.errors import (
    AuthenticationError,
    InvalidRequestError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    ProviderTimeoutError,
    RateLimitedError,
)
from dive.llm import Model
from dive.messages import validate_complete_turns
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.providers.google import GeminiModel
from dive.providers.openai import OpenAIChatModel, OpenAIResponsesModel

FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
ONCE = RetryPolicy(max_retries=1, initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
ANSWER = "Hello after the retry."

PROVIDERS = ("anthropic", "openai-chat", "openai-responses", "gemini")
MODES = [
    pytest.param(p, s, id=f"{p}-{'stream' if s else 'json'}")
    for p in PROVIDERS
    for s in (True, False)
]

RETRIED_STATUSES = (408, 409, 429, 500, 502, 503, 504, 529)
NOT_RETRIED_STATUSES = (400, 401, 403, 404)

CLASS_OF: dict[int, type[ProviderError]] = {
    400: InvalidRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    408: ProviderTimeoutError,
    409: ProviderError,
    429: RateLimitedError,
    500: ProviderError,
    502: ProviderError,
    503: OverloadedError,
    504: ProviderTimeoutError,
    529: OverloadedError,
}


@dataclass
class Harness:
    """One provider's simulator and how to script a fault on it."""

    provider: str
    sim: Any
    models: list[Any]

    def fault(self, status: int, should_retry: bool | None = None) -> Any:
        if self.provider == "anthropic":
            return anth.SimFault(status=status, should_retry=should_retry)
        if self.provider == "gemini":
            headers = {} if should_retry is None else {"x-should-retry": str(should_retry).lower()}
            return gem.SimFault(status=status, headers=headers)
        return oai.SimFault(status=status, should_retry=should_retry)

    def answer(self) -> Any:
        module: Any = {"anthropic": anth, "gemini": gem}.get(self.provider, oai)
        return module.text(ANSWER)

    def requests(self) -> int:
        if self.provider == "anthropic":
            return len(self.sim.message_requests)
        if self.provider == "gemini":
            return len(self.sim.generate_requests)
        if self.provider == "openai-chat":
            return len(self.sim.chat_requests)
        return len(self.sim.responses_requests)

    def model(self, *, streaming: bool, retry: RetryPolicy = FAST) -> Model:
        url = self.sim.url
        options: dict[str, Any] = {"base_url": url, "api_key": "test"}
        options.update(retry=retry, streaming=streaming)
        model = construct(self.provider, options)
        self.models.append(model)
        return model


def construct(provider: str, options: dict[str, Any]) -> Any:
    """The provider's model with ``options``."""
    if provider == "anthropic":
        return AnthropicModel("claude-sonnet-4-6", **options)
    if provider == "openai-chat":
        return OpenAIChatModel("gpt-4.1", **options)
    if provider == "openai-responses":
        return OpenAIResponsesModel("gpt-5", **options)
    return GeminiModel("gemini-2.5-flash", **options)


@pytest.fixture
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[Harness]:
    provider: str = request.param
    start: Any = {"anthropic": anth.simulator, "gemini": gem.simulator}.get(provider, oai.simulator)
    with start(assert_consumed=True) as sim:
        h = Harness(provider, sim, [])
        try:
            yield h
        finally:
            for model in h.models:
                await model.aclose()


def _cases(statuses: tuple[int, ...]) -> list[Any]:
    return [
        pytest.param(p, s, status, id=f"{p}-{'stream' if s else 'json'}-{status}")
        for status in statuses
        for p in PROVIDERS
        for s in (True, False)
    ]


@pytest.mark.parametrize(
    ("harness", "streaming", "status"), _cases(RETRIED_STATUSES), indirect=["harness"]
)
async def test_retryable_status_is_retried(harness: Harness, streaming: bool, status: int) -> None:
    harness.sim.add(harness.fault(status), harness.answer())
    result = await Agent(model=harness.model(streaming=streaming)).run("hi")

    assert result.status == "completed", result.error
    assert result.output_text == ANSWER
    assert harness.requests() == 2
    validate_complete_turns(result.turn.messages)


@pytest.mark.parametrize(
    ("harness", "streaming", "status"), _cases(RETRIED_STATUSES), indirect=["harness"]
)
async def test_exhausted_retries_report_the_status_error(
    harness: Harness, streaming: bool, status: int
) -> None:
    harness.sim.add(harness.fault(status), harness.fault(status))
    result = await Agent(model=harness.model(streaming=streaming, retry=ONCE)).run("hi")

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    assert result.outcome.next == "continue"
    err = result.error
    assert type(err) is CLASS_OF[status]
    assert isinstance(err, ProviderError)
    assert err.status == status
    assert err.retryable
    assert harness.requests() == 2
    validate_complete_turns(result.turn.messages)


@pytest.mark.parametrize(
    ("harness", "streaming", "status"), _cases(NOT_RETRIED_STATUSES), indirect=["harness"]
)
async def test_client_error_status_is_not_retried(
    harness: Harness, streaming: bool, status: int
) -> None:
    harness.sim.add(harness.fault(status))
    result = await Agent(model=harness.model(streaming=streaming)).run("hi")

    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    err = result.error
    assert type(err) is CLASS_OF[status]
    assert isinstance(err, ProviderError)
    assert err.status == status
    assert not err.retryable
    assert harness.requests() == 1


@pytest.mark.parametrize(("harness", "streaming"), MODES, indirect=["harness"])
async def test_should_retry_false_forbids_a_retry(harness: Harness, streaming: bool) -> None:
    harness.sim.add(harness.fault(500, should_retry=False))
    result = await Agent(model=harness.model(streaming=streaming)).run("hi")

    assert result.status == "incomplete"
    assert isinstance(result.error, ProviderError)
    assert result.error.status == 500
    assert not result.error.retryable
    assert harness.requests() == 1


@pytest.mark.parametrize(("harness", "streaming"), MODES, indirect=["harness"])
async def test_should_retry_true_forces_a_retry(harness: Harness, streaming: bool) -> None:
    harness.sim.add(harness.fault(400, should_retry=True), harness.answer())
    result = await Agent(model=harness.model(streaming=streaming)).run("hi")

    assert result.status == "completed", result.error
    assert harness.requests() == 2
