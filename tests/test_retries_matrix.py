"""The rows of the fault matrix in docs/providers.md not covered by the status and connect tests.

Malformed data is never retried; a cut before content uses the normal retry budget and ends
``provider_error`` with ``ProviderConnectionError``; a cut after content ends
``stream_interrupted``; ``retry-after`` replaces the exponential backoff.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

import dive.testing.anthropic as anth
import dive.testing.gemini as gem
import dive.testing.openai as oai
from dive.agent import Agent
from dive.errors import ProviderConnectionError, StreamInterruptedError
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.providers.google import GeminiModel
from dive.providers.openai import OpenAIChatModel, OpenAIResponsesModel

FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
LONG = "Hello there, this answer is long enough to arrive in several text deltas."
PROVIDERS = ("anthropic", "openai-chat", "openai-responses", "gemini")
# Events (chunks for Gemini) a stream sends before its first text delta has gone out, plus one.
AFTER_CONTENT = {"anthropic": 3, "openai-chat": 3, "openai-responses": 6, "gemini": 2}

_OPEN: list[Any] = []


@pytest.fixture(autouse=True)
async def _close_models() -> AsyncIterator[None]:
    yield
    while _OPEN:
        await _OPEN.pop().aclose()


def module(provider: str) -> Any:
    return {"anthropic": anth, "gemini": gem}.get(provider, oai)


def after(provider: str, n: int) -> dict[str, int]:
    return {"after_chunks" if provider == "gemini" else "after_events": n}


def make(provider: str, url: str, *, streaming: bool = True, retry: RetryPolicy = FAST) -> Any:
    options: dict[str, Any] = {"base_url": url, "api_key": "test"}
    options.update(streaming=streaming, retry=retry)
    model: Any
    if provider == "anthropic":
        model = AnthropicModel("claude-sonnet-4-6", **options)
    elif provider == "openai-chat":
        model = OpenAIChatModel("gpt-4.1", **options)
    elif provider == "openai-responses":
        model = OpenAIResponsesModel("gpt-5", **options)
    else:
        model = GeminiModel("gemini-2.5-flash", **options)
    _OPEN.append(model)
    return model


ALL = [
    pytest.param(p, s, id=f"{p}-{'stream' if s else 'json'}")
    for p in PROVIDERS
    for s in (True, False)
]


@pytest.mark.parametrize(("provider", "streaming"), ALL)
async def test_malformed_data_before_content_is_not_retried(provider: str, streaming: bool) -> None:
    mod = module(provider)
    with mod.simulator() as sim:
        sim.add(mod.SimMalformed(**after(provider, 0)))
        result = await Agent(model=make(provider, sim.url, streaming=streaming)).run("hi")
        assert len(sim.requests) == 1
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    assert isinstance(result.error, StreamInterruptedError)
    assert not result.error.retryable


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("fault", ["malformed", "cut"])
async def test_failure_after_content_is_stream_interrupted(provider: str, fault: str) -> None:
    mod = module(provider)
    cls = mod.SimMalformed if fault == "malformed" else mod.SimCut
    with mod.simulator() as sim:
        sim.add(cls(**after(provider, AFTER_CONTENT[provider]), reply=mod.text(LONG)))
        result = await Agent(model=make(provider, sim.url)).run("hi")
        assert len(sim.requests) == 1
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "stream_interrupted"
    assert result.outcome.next == "continue"
    assert isinstance(result.error, StreamInterruptedError)
    assert result.turn.messages[-2].role == "assistant"  # the partial text is kept
    assert LONG.startswith(result.turn.messages[-2].text)


@pytest.mark.parametrize(("provider", "streaming"), ALL)
async def test_cut_before_content_uses_the_normal_budget(provider: str, streaming: bool) -> None:
    mod = module(provider)
    policy = RetryPolicy(max_retries=3, initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
    with mod.simulator() as sim:
        sim.add(*[mod.SimCut(**after(provider, 0)) for _ in range(4)])
        result = await Agent(model=make(provider, sim.url, streaming=streaming, retry=policy)).run(
            "hi"
        )
        assert len(sim.requests) == 4
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    assert isinstance(result.error, ProviderConnectionError)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_retry_after_replaces_the_backoff(provider: str) -> None:
    mod = module(provider)
    slow = RetryPolicy(initial_backoff=5.0, max_backoff=10.0, jitter=0.0)
    with mod.simulator() as sim:
        sim.add(mod.SimFault(status=429, retry_after=0.05), mod.text("ok"))
        started = time.monotonic()
        result = await Agent(model=make(provider, sim.url, retry=slow)).run("hi")
        elapsed = time.monotonic() - started
    assert result.status == "completed", result.error
    assert 0.05 <= elapsed < 2.0  # the server's 0.05 s, not the policy's 5 s


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat", "openai-responses"])
async def test_in_stream_error_of_a_non_retryable_type_is_not_retried(provider: str) -> None:
    with module(provider).simulator() as sim:
        if provider == "anthropic":
            sim.add(anth.SimStreamError(after_events=1, error_type="invalid_request_error"))
        else:
            sim.add(
                oai.SimStreamError(
                    after_events=1, code="invalid_prompt", type="invalid_request_error"
                )
            )
        result = await Agent(model=make(provider, sim.url)).run("hi")
        assert len(sim.requests) == 1
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    assert result.error is not None
    assert not getattr(result.error, "retryable", True)
