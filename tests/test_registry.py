"""The model registry: prefixes, bare names, and the errors that say what to do."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

import dive
from dive.agent import Agent
from dive.errors import (
    MissingCredentialsError,
    MissingExtraError,
    UnknownModelError,
    UnknownProviderError,
)
from dive.llm import ModelRequest
from dive.messages import Message
from dive.providers import COMPATIBLE, PROVIDERS


@pytest.mark.parametrize(
    ("spec", "cls", "provider"),
    [
        ("anthropic:claude-sonnet-4-6", "AnthropicModel", "anthropic"),
        ("claude-sonnet-4-6", "AnthropicModel", "anthropic"),
        ("openai:gpt-5", "OpenAIResponsesModel", "openai"),
        ("gpt-5", "OpenAIResponsesModel", "openai"),
        ("o4-mini", "OpenAIResponsesModel", "openai"),
        ("openai-chat:gpt-4.1", "OpenAIChatModel", "openai"),
        ("groq:llama-3.3-70b", "OpenAIChatModel", "groq"),
        ("mistral-large-latest", "OpenAIChatModel", "mistral"),
        ("vendor/some-model", "OpenAIChatModel", "openrouter"),
    ],
)
def test_prefixes_and_bare_names(spec: str, cls: str, provider: str) -> None:
    m = dive.model(spec, api_key="k")
    assert type(m).__name__ == cls
    assert m.provider == provider


def test_local_servers_need_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    m = dive.model("ollama:qwen3")
    assert m.provider == "ollama"
    assert m.name == "qwen3"
    assert COMPATIBLE["ollama"].base_url == "http://localhost:11434/v1"


def test_unknown_prefix_lists_the_known_ones() -> None:
    with pytest.raises(UnknownProviderError) as err:
        dive.model("bogus:x")
    for name in PROVIDERS:
        assert name in str(err.value)


def test_unmatched_bare_name() -> None:
    with pytest.raises(UnknownModelError, match="provider:model"):
        dive.model("llama3")


async def test_missing_key_names_the_variable_at_the_first_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GROQ_API_KEY", "GROQ_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    request = ModelRequest(messages=(Message.user("hi"),))
    for spec, variable in (
        ("anthropic:claude-sonnet-4-6", "ANTHROPIC_API_KEY"),
        ("groq:llama", "GROQ_API_KEY"),
    ):
        model: Any = dive.model(spec)  # building reads no credentials
        with pytest.raises(MissingCredentialsError, match=variable):
            await model.generate(request)


def test_missing_extra_names_the_pip_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def fake(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name == "openai" else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", fake)
    with pytest.raises(MissingExtraError, match=r"pip install 'dive-agents\[openai\]'"):
        dive.model("openai:gpt-5", api_key="k")


def test_agent_accepts_a_model_string() -> None:
    agent = Agent(model="ollama:qwen3")
    assert agent.model.provider == "ollama"
