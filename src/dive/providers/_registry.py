"""The model registry: ``dive.model("provider:model")``.

An explicit prefix wins (``anthropic-vertex:`` and ``anthropic-bedrock:`` reach Claude on
Vertex AI and Bedrock); a bare name is matched by ordered prefixes (``claude-`` → anthropic;
``gpt-``, ``o3``, ``o4``, ``codex`` → openai; ``gemini-`` → google; Mistral's families →
mistral; any other name with ``/`` → openrouter). A ``vendor/model`` name whose vendor dive
serves directly (``anthropic/claude-…``) is ambiguous and raises ``UserError`` naming both
spellings (``anthropic:claude-…`` or ``openrouter:anthropic/claude-…``). An unknown prefix
raises ``UnknownProviderError`` listing the known ones; an unmatched bare name raises
``UnknownModelError``; a missing SDK raises ``MissingExtraError`` naming the ``pip install``
to run. Credentials are not read here: each model reads its key and base URL at its first
request, and a missing key is reported then, naming the variables to set.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

from dive.errors import (
    MissingExtraError,
    UnknownModelError,
    UnknownProviderError,
    UserError,
)
from dive.llm import Model

__all__ = ["COMPATIBLE", "PROVIDERS", "model", "provider_of"]


@dataclass(frozen=True, slots=True)
class Compatible:
    """An OpenAI-compatible server reached through Chat Completions."""

    base_url: str
    key_env: str
    key_required: bool = True


COMPATIBLE: dict[str, Compatible] = {
    "ollama": Compatible("http://localhost:11434/v1", "OLLAMA_API_KEY", key_required=False),
    "vllm": Compatible("http://localhost:8000/v1", "VLLM_API_KEY", key_required=False),
    "llamacpp": Compatible("http://localhost:8080/v1", "LLAMACPP_API_KEY", key_required=False),
    "openrouter": Compatible("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "groq": Compatible("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "mistral": Compatible("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "deepinfra": Compatible("https://api.deepinfra.com/v1/openai", "DEEPINFRA_API_KEY"),
}

PROVIDERS = (
    "anthropic",
    "anthropic-vertex",
    "anthropic-bedrock",
    "openai",
    "openai-chat",
    "google",
    *COMPATIBLE,
)

_EXTRA = {"anthropic": ("anthropic", "anthropic"), "google": ("google.genai", "google")}

_BARE = (
    ("claude-", "anthropic"),
    ("gpt-", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("codex", "openai"),
    ("gemini-", "google"),
    ("mistral-", "mistral"),
    ("ministral-", "mistral"),
    ("codestral-", "mistral"),
    ("devstral-", "mistral"),
)


_DIRECT = {"anthropic": "anthropic", "openai": "openai", "google": "google", "gemini": "google"}


def _split(spec: str) -> tuple[str, str]:
    if ":" in spec:
        prefix, name = spec.split(":", 1)
        if prefix not in PROVIDERS:
            raise UnknownProviderError(
                f"unknown provider {prefix!r} in {spec!r}; known providers: {', '.join(PROVIDERS)}"
            )
        return prefix, name
    for start, provider in _BARE:
        if spec.startswith(start):
            return provider, spec
    if "/" in spec:
        vendor, _, rest = spec.partition("/")
        direct = _DIRECT.get(vendor)
        if direct is not None:
            raise UserError(
                f"{spec!r} is ambiguous: write '{direct}:{rest}' to call {vendor}'s own API, "
                f"or 'openrouter:{spec}' to go through OpenRouter"
            )
        return "openrouter", spec
    raise UnknownModelError(
        f"cannot tell which provider serves {spec!r}; write it as 'provider:model' with one of "
        f"{', '.join(PROVIDERS)}"
    )


def provider_of(spec: str) -> str:
    """The provider prefix that serves ``spec`` (``"claude-sonnet-4-6"`` → ``"anthropic"``).

    The same rules as :func:`model`, without building anything: an explicit prefix wins, a
    bare name is matched by ordered prefixes.

    Args:
        spec: ``"provider:model"`` or a bare model name.

    Raises:
        UnknownProviderError: the prefix is not one of ``PROVIDERS``.
        UnknownModelError: a bare name no rule matches.
        UserError: an ambiguous ``vendor/model`` name.
    """
    return _split(spec)[0]


def _require(module: str, extra: str) -> None:
    if importlib.util.find_spec(module.split(".")[0]) is None:
        raise MissingExtraError(
            f"this model needs the {extra} extra: pip install 'dive-agents[{extra}]'"
        )


def model(spec: str, **options: Any) -> Model:
    """A model from ``"provider:model"`` (or a bare name); ``options`` go to its constructor.

    Args:
        spec: ``"provider:model"`` (``anthropic:claude-sonnet-4-6``, ``openai:gpt-5``,
            ``ollama:qwen3``, ...) or a bare model name whose prefix names its provider.
        options: keyword arguments of the provider's model class (``api_key``, ``base_url``,
            ``retry``, ``timeout``, ...).
    """
    provider, name = _split(spec)
    if not name:
        raise UserError(f"{spec!r} names no model after the provider prefix")
    if provider == "anthropic":
        _require("anthropic", "anthropic")
        from dive.providers.anthropic import AnthropicModel

        return AnthropicModel(name, **options)
    if provider in ("anthropic-vertex", "anthropic-bedrock"):
        _require("anthropic", provider.removeprefix("anthropic-"))
        from dive.providers.anthropic import AnthropicBedrockModel, AnthropicVertexModel

        platform = AnthropicVertexModel if provider == "anthropic-vertex" else AnthropicBedrockModel
        return platform(name, **options)
    if provider == "google":
        _require("google.genai", "google")
        from dive.providers.google import GeminiModel

        return GeminiModel(name, **options)
    _require("openai", "openai")
    from dive.providers.openai import OpenAIChatModel, OpenAIResponsesModel

    if provider == "openai":
        return OpenAIResponsesModel(name, **options)
    if provider == "openai-chat":
        return OpenAIChatModel(name, **options)
    preset = COMPATIBLE[provider]
    options.setdefault("default_base_url", preset.base_url)
    options.setdefault("provider", provider)
    options.setdefault("key_env", preset.key_env)
    options.setdefault("key_required", preset.key_required)
    return OpenAIChatModel(name, **options)
