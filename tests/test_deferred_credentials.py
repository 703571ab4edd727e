"""Credentials are resolved at the first request, not when a model or agent is built.

A module-level ``Agent(model="anthropic:…")`` must import without any key set (test
collection, a CLI's ``--help``); the first request then raises ``MissingCredentialsError``
naming the variables to set. A provider's base-URL variable alone (``ANTHROPIC_BASE_URL``,
``OPENAI_BASE_URL``, ``GEMINI_BASE_URL``, ``OPENROUTER_BASE_URL``, …) is enough: local servers
and proxies need no key. Each case runs through the official SDK against a simulator.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

import dive
import dive.testing.anthropic as anth
import dive.testing.gemini as gem
import dive.testing.openai as oai
from dive import Agent
from dive.errors import MissingCredentialsError
from dive.llm import ModelRequest
from dive.messages import Message

SPECS = {
    "anthropic": "anthropic:claude-sonnet-4-6",
    "openai": "openai:gpt-5",
    "openai-chat": "openai-chat:gpt-4.1",
    "google": "google:gemini-2.5-flash",
    "openrouter": "openrouter:anthropic/claude-sonnet-4.5",
    "groq": "groq:llama-3.3-70b-versatile",
}
KEY_ENV = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "google": "GEMINI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "groq": "GROQ_API_KEY",
}
BASE_ENV = {
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai": "OPENAI_BASE_URL",
    "openai-chat": "OPENAI_BASE_URL",
    "google": "GEMINI_BASE_URL",
    "openrouter": "OPENROUTER_BASE_URL",
    "groq": "GROQ_BASE_URL",
}


@pytest.fixture(autouse=True)
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_BASE_URL", "_AUTH_TOKEN")):
            monkeypatch.delenv(name)


def _request() -> ModelRequest:
    return ModelRequest(messages=(Message.user("hi"),))


@pytest.mark.parametrize("provider", list(SPECS))
async def test_an_agent_builds_without_a_key_and_the_first_request_says_which_to_set(
    provider: str,
) -> None:
    agent = Agent(model=SPECS[provider], instructions="Be brief.")  # no key: builds anyway
    model: Any = agent.model
    with pytest.raises(MissingCredentialsError) as info:
        await model.generate(_request())
    text = str(info.value)
    assert KEY_ENV[provider] in text
    assert BASE_ENV[provider] in text
    assert "api_key=" in text
    await model.aclose()


@pytest.mark.parametrize("provider", ["anthropic", "openai", "google"])
async def test_a_run_without_a_key_ends_on_the_missing_credentials(provider: str) -> None:
    agent = Agent(model=SPECS[provider])
    result = await agent.run("hi")
    assert result.status == "incomplete"
    assert isinstance(result.error, MissingCredentialsError)
    assert KEY_ENV[provider] in str(result)
    assert result.usage.requests == 0
    await agent.model.aclose()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]


def _simulator(provider: str) -> Any:
    if provider == "anthropic":
        return anth.simulator()
    if provider == "google":
        return gem.simulator()
    return oai.simulator()


def _answer(provider: str) -> Any:
    module: Any = {"anthropic": anth, "google": gem}.get(provider, oai)
    return module.text("served without a key")


@pytest.mark.parametrize("provider", list(SPECS))
async def test_the_base_url_variable_alone_is_enough(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = Agent(model=SPECS[provider])  # built before the variable is set, like a module agent
    with _simulator(provider) as sim:
        sim.add(_answer(provider))
        monkeypatch.setenv(BASE_ENV[provider], sim.url)
        result = await agent.run("hi")
        assert result.status == "completed", result.error
        assert result.output_text == "served without a key"
        assert len(sim.requests) == 1
    await agent.model.aclose()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]


async def test_a_key_set_after_the_model_was_built_is_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model: Any = dive.model("anthropic:claude-sonnet-4-6")
    with anth.simulator() as sim:
        sim.add(anth.text("keyed"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-set-after-import")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.url)
        response = await model.generate(_request())
        sent = sim.requests[0].headers
        assert "sk-ant-api03-set-after-import" in (sent.get("x-api-key") or sent["authorization"])
    assert response.text == "keyed"
    await model.aclose()


async def test_closing_a_model_that_never_made_a_request_needs_no_credentials() -> None:
    for spec in SPECS.values():
        model: Any = dive.model(spec)
        await model.aclose()
