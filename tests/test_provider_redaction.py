"""A key a provider echoes in an error never leaks through the chained SDK exception.

A 401 saying ``invalid x-api-key: <the key>`` comes back from each simulator through the
official SDK. Neither the ``ProviderError`` a model raises (called directly, streaming or not)
nor the ``result.error`` of a run may show the key when printed as a traceback
(``traceback.format_exception``) or logged with ``logger.exception``: the chained exception's
text, message and body are redacted as well.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import AsyncIterator
from typing import Any

import pytest

import dive.testing.anthropic as anth
import dive.testing.gemini as gem
import dive.testing.openai as oai
from dive import Agent
from dive.errors import AuthenticationError
from dive.llm import ModelRequest, collect
from dive.messages import Message
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.providers.google import GeminiModel
from dive.providers.openai import OpenAIChatModel, OpenAIResponsesModel

# Keys of no recognisable shape: only the registered key (api_key=) can catch them.
KEYS = {
    "anthropic": "anthropic-" + "LEAKME" * 5,
    "openai-chat": "opnai-" + "LEAKME" * 5,
    "openai-responses": "opnai-" + "LEAKME" * 5,
    "gemini": "gmni-" + "LEAKME" * 5,
}
PROVIDERS = tuple(KEYS)
ONCE = RetryPolicy(max_retries=0)


def _fault(provider: str, key: str) -> Any:
    message = f"invalid x-api-key: {key}"
    if provider == "anthropic":
        return anth.SimFault(status=401, error_type="authentication_error", message=message)
    if provider == "gemini":
        return gem.SimFault(status=401, message=message)
    return oai.SimFault(status=401, message=message)


def _model(provider: str, url: str, *, streaming: bool) -> Any:
    options: dict[str, Any] = {
        "base_url": url,
        "api_key": KEYS[provider],
        "retry": ONCE,
        "streaming": streaming,
    }
    if provider == "anthropic":
        return AnthropicModel("claude-sonnet-4-6", **options)
    if provider == "openai-chat":
        return OpenAIChatModel("gpt-4.1", **options)
    if provider == "openai-responses":
        return OpenAIResponsesModel("gpt-5", **options)
    return GeminiModel("gemini-2.5-flash", **options)


@pytest.fixture
async def sim(request: pytest.FixtureRequest) -> AsyncIterator[tuple[str, Any]]:
    provider: str = request.param
    start: Any = {"anthropic": anth.simulator, "gemini": gem.simulator}.get(provider, oai.simulator)
    with start() as s:
        s.add(_fault(provider, KEYS[provider]))
        yield provider, s


def _printed(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in out:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


CASES = [
    pytest.param(p, s, id=f"{p}-{'stream' if s else 'json'}")
    for p in PROVIDERS
    for s in (True, False)
]


@pytest.mark.parametrize(("sim", "streaming"), CASES, indirect=["sim"])
async def test_a_model_called_directly_raises_an_error_whose_chain_hides_the_key(
    sim: tuple[str, Any], streaming: bool, caplog: pytest.LogCaptureFixture
) -> None:
    provider, server = sim
    model = _model(provider, server.url, streaming=streaming)
    request = ModelRequest(messages=(Message.user("hi"),))
    call = collect(model, request) if streaming else model.generate(request)
    try:
        with pytest.raises(AuthenticationError) as info:
            await call
    finally:
        await model.aclose()
    error = info.value
    chain = _chain(error)
    assert len(chain) > 1  # the SDK's exception is still there, as the cause
    assert "LEAKME" not in _printed(error)
    for link in chain:
        assert "LEAKME" not in str(link)
        assert "LEAKME" not in repr(getattr(link, "message", ""))
        assert "LEAKME" not in repr(getattr(link, "body", ""))
    assert "invalid x-api-key: [redacted]" in str(error)  # what happened is still said
    with caplog.at_level(logging.ERROR):
        try:
            raise error
        except AuthenticationError:
            logging.getLogger("test").exception("the model call failed")
    assert "the model call failed" in caplog.text
    assert "LEAKME" not in caplog.text


@pytest.mark.parametrize(("sim", "streaming"), CASES, indirect=["sim"])
async def test_a_runs_error_hides_the_key_in_its_whole_traceback(
    sim: tuple[str, Any], streaming: bool
) -> None:
    provider, server = sim
    model = _model(provider, server.url, streaming=streaming)
    try:
        result = await Agent(model=model).run("hi")
    finally:
        await model.aclose()
    assert isinstance(result.error, AuthenticationError)
    assert "LEAKME" not in _printed(result.error)
    for link in _chain(result.error):
        assert "LEAKME" not in repr(getattr(link, "message", ""))
        assert "LEAKME" not in repr(getattr(link, "body", ""))
