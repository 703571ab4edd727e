"""A refused connection fails fast and says what to do (issue 12, item 2); ``str(RunResult)``.

A port nothing listens on (a socket bound, then closed) stands in for a server that is not
running. With the default ``RetryPolicy`` every provider gives up well under 5 s with a
``ProviderConnectionError`` naming the URL and the environment variable to check.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2
import pytest

from dive.agent import Agent, RunResult
from dive.errors import ProviderConnectionError
from dive.llm import Model
from dive.providers import RetryPolicy
from dive.providers._retry import CONNECT_FAILED
from dive.providers.anthropic import AnthropicModel
from dive.providers.google import GeminiModel
from dive.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from dive.testing import ScriptedModel, Step, call, text, tool_use
from dive.tools import Suspend, tool

BOUND = 5.0  # seconds a refused connection may take with the default policy, all retries included

PROVIDERS = ("anthropic", "openai-chat", "openai-responses", "gemini")
TARGETS: dict[str, tuple[str, str]] = {
    # provider: (a part of the URL the request goes to, the environment variable named)
    "anthropic": ("/v1/messages", "ANTHROPIC_BASE_URL"),
    "openai-chat": ("/v1/chat/completions", "OPENAI_BASE_URL"),
    "openai-responses": ("/v1/responses", "OPENAI_BASE_URL"),
    "gemini": ("/models/gemini-2.5-flash:", "GEMINI_BASE_URL"),
}
CASES = [
    pytest.param(p, s, id=f"{p}-{'stream' if s else 'json'}")
    for p in PROVIDERS
    for s in (True, False)
]


@pytest.fixture
def dead_url() -> str:
    """``http://127.0.0.1:<port>`` where nothing listens."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"


_OPEN: list[Any] = []


@pytest.fixture(autouse=True)
async def _close_models() -> AsyncIterator[None]:
    yield
    while _OPEN:
        await _OPEN.pop().aclose()


def make(provider: str, url: str, *, streaming: bool) -> Model:
    options: dict[str, Any] = {"api_key": "test", "streaming": streaming}
    model: Any
    if provider == "anthropic":
        model = AnthropicModel("claude-sonnet-4-6", base_url=url, **options)
    elif provider == "openai-chat":
        model = OpenAIChatModel("gpt-4.1", base_url=f"{url}/v1", **options)
    elif provider == "openai-responses":
        model = OpenAIResponsesModel("gpt-5", base_url=f"{url}/v1", **options)
    else:
        model = GeminiModel("gemini-2.5-flash", base_url=url, **options)
    _OPEN.append(model)
    return model


@pytest.mark.parametrize(("provider", "streaming"), CASES)
async def test_refused_connection_fails_fast_with_what_to_do(
    dead_url: str, provider: str, streaming: bool
) -> None:
    model = make(provider, dead_url, streaming=streaming)
    started = time.monotonic()
    result = await asyncio.wait_for(Agent(model=model).run("hi"), timeout=BOUND + 3)
    elapsed = time.monotonic() - started

    assert elapsed < BOUND
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "provider_error"
    assert result.outcome.next == "continue"
    err = result.error
    assert isinstance(err, ProviderConnectionError)
    assert err.retryable
    suffix, env = TARGETS[provider]
    message = str(err)
    assert message.startswith(f"could not connect to {dead_url}/"), message
    assert suffix in message.split(": connection refused")[0]
    assert ": connection refused — is the server running? check " in message
    assert env in message
    assert result.outcome.error is not None
    assert "connection refused" in result.outcome.error
    line = str(result)
    assert line == f"incomplete (provider_error): {message}; next: continue · {result.usage}"
    assert "\n" not in line


async def test_connect_retries_are_configurable(dead_url: str) -> None:
    attempts: list[str] = []

    async def count(request: httpx2.Request) -> None:
        attempts.append(str(request.url))

    def client() -> anthropic.AsyncAnthropic:
        http = httpx2.AsyncClient(event_hooks={"request": [count]})
        return anthropic.AsyncAnthropic(api_key="test", base_url=dead_url, http_client=http)

    default = AnthropicModel("claude-sonnet-4-6", client=client())
    _OPEN.append(default)
    result = await asyncio.wait_for(Agent(model=default).run("hi"), timeout=BOUND + 3)
    assert isinstance(result.error, ProviderConnectionError)
    assert len(attempts) == 1 + RetryPolicy().connect_retries

    attempts.clear()
    policy = RetryPolicy(connect_retries=4, connect_backoff=0.001, jitter=0.0)
    more = AnthropicModel("claude-sonnet-4-6", client=client(), retry=policy)
    _OPEN.append(more)
    result = await asyncio.wait_for(Agent(model=more).run("hi"), timeout=BOUND)
    assert isinstance(result.error, ProviderConnectionError)
    assert len(attempts) == 5


def test_default_connect_backoff_is_bounded() -> None:
    policy = RetryPolicy()
    refused = ProviderConnectionError("x", error_type=CONNECT_FAILED)
    assert policy.should_retry(policy.connect_retries - 1, refused)
    assert not policy.should_retry(policy.connect_retries, refused)
    worst = sum(policy.delay(k, refused) for k in range(policy.connect_retries) for _ in range(1))
    assert worst < BOUND / 2
    # A connection that broke after it was made keeps the normal budget.
    broke = ProviderConnectionError("x")
    assert policy.should_retry(policy.max_retries - 1, broke)


# --- str(RunResult) ---------------------------------------------------------------------------


async def test_str_of_a_completed_result() -> None:
    result = await Agent(model=ScriptedModel([text("Hi.")])).run("hi")
    assert str(result) == (
        "completed (end_turn) · input 0 (uncached 0, cache write 0, cache read 0) · output 1"
        " · 1 request · cost unknown"
    )


async def test_str_of_an_incomplete_result_is_one_line() -> None:
    boom = RuntimeError("first line\nsecond line")
    result: RunResult[Any] = await Agent(model=ScriptedModel([Step(raise_before=boom)])).run("hi")
    line = str(result)
    assert line.startswith("incomplete (provider_error): ") or line.startswith("incomplete (")
    assert "first line second line" in line
    assert line.endswith(
        f"; next: {result.outcome.next if result.outcome else ''} · {result.usage}"
    )
    assert "\n" not in line


async def test_str_of_a_suspended_result() -> None:
    @tool(effect_type="read_only")
    def ask(question: str) -> Suspend:
        """Ask a person."""
        return Suspend(question, reason="input_required")

    model = ScriptedModel([tool_use(call("ask", {"question": "ok?"}))])
    result = await Agent(model=model, tools=[ask]).run("hi")
    assert result.status == "suspended"
    assert str(result) == (
        "suspended: 1 pending tool call; next: resume with tool_results · input 0 (uncached 0,"
        " cache write 0, cache read 0) · output 8 · 1 request"
        " · cost unknown"
    )
