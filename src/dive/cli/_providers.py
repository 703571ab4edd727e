"""Which model a command talks to: the known providers, their credentials, the offline choice.

A provider has credentials when one of its key variables or its base-URL variable is set
(local servers such as Ollama need neither: they have a default address). With no
``--model``, the first of Anthropic, OpenAI and Google with credentials is used. When the
chosen provider has none, dive answers with its bundled Anthropic simulator (the
``demo_brain`` fallback, through the official SDK) and says so in one line naming the
variables to set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dive.providers import COMPATIBLE, PROVIDERS, provider_of

__all__ = [
    "OFFLINE_MODEL",
    "ModelChoice",
    "ProviderInfo",
    "choose_model",
    "credential_of",
    "known_providers",
]

OFFLINE_MODEL = "claude-sonnet-4-6"
"""The model name the offline simulator answers as (priced like the real one)."""

_PREFERRED = ("anthropic", "openai", "google")
_EXAMPLES = {
    "anthropic": "claude-sonnet-4-6",
    "anthropic-vertex": "claude-sonnet-4-6",
    "anthropic-bedrock": "anthropic.claude-sonnet-4-5-20250929-v1:0",
    "openai": "gpt-5",
    "openai-chat": "gpt-4.1",
    "google": "gemini-2.5-flash",
    "ollama": "qwen3",
    "vllm": "Qwen/Qwen3-8B",
    "llamacpp": "local",
    "openrouter": "anthropic/claude-sonnet-4.5",
    "groq": "llama-3.3-70b-versatile",
    "mistral": "mistral-large-latest",
    "deepinfra": "meta-llama/Llama-3.3-70B-Instruct",
}
_KEYS = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "anthropic-vertex": ("ANTHROPIC_VERTEX_PROJECT_ID",),  # credentials: Google's default ones
    "anthropic-bedrock": ("AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_PROFILE"),
    "openai": ("OPENAI_API_KEY",),
    "openai-chat": ("OPENAI_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
_BASE_URLS = {
    "anthropic": "ANTHROPIC_BASE_URL",
    "anthropic-vertex": "ANTHROPIC_VERTEX_BASE_URL",
    "anthropic-bedrock": "ANTHROPIC_BEDROCK_BASE_URL",
    "openai": "OPENAI_BASE_URL",
    "openai-chat": "OPENAI_BASE_URL",
    "google": "GEMINI_BASE_URL",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderInfo:
    """A provider the registry knows, and how it finds its credentials.

    Attributes:
        name: the ``provider:`` prefix.
        key_envs: the API-key variables it reads.
        base_url_env: the variable naming its server.
        example: a model name it serves.
        key_required: False for local servers that need no key.
        default_base_url: where a local server is reached by default.
    """

    name: str
    key_envs: tuple[str, ...]
    base_url_env: str
    example: str
    key_required: bool = True
    default_base_url: str | None = None


def known_providers() -> tuple[ProviderInfo, ...]:
    """Every provider of ``dive.providers.PROVIDERS``, in its order."""
    out: list[ProviderInfo] = []
    for name in PROVIDERS:
        preset = COMPATIBLE.get(name)
        if preset is not None:
            out.append(
                ProviderInfo(
                    name=name,
                    key_envs=(preset.key_env,),
                    base_url_env=f"{name.upper()}_BASE_URL",
                    example=_EXAMPLES[name],
                    key_required=preset.key_required,
                    default_base_url=preset.base_url,
                )
            )
        else:
            out.append(
                ProviderInfo(
                    name=name,
                    key_envs=_KEYS[name],
                    base_url_env=_BASE_URLS[name],
                    example=_EXAMPLES[name],
                )
            )
    return tuple(out)


def _info(name: str) -> ProviderInfo:
    return next(p for p in known_providers() if p.name == name)


def credential_of(info: ProviderInfo, environ: Mapping[str, str]) -> str | None:
    """The variable that gives ``info`` its credentials (None when none is set)."""
    for env in (*info.key_envs, info.base_url_env):
        if environ.get(env):
            return env
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChoice:
    """The model a command will use.

    Attributes:
        spec: ``provider:model`` as asked for (or picked).
        provider: the provider prefix.
        name: the model name.
        offline: answered by the bundled simulator.
        base_url: the server to pass explicitly (from the base-URL variable), if any.
        notice: the one line to print on stderr (offline only).
    """

    spec: str
    provider: str
    name: str
    offline: bool = False
    base_url: str | None = None
    notice: str | None = None

    @property
    def label(self) -> str:
        """How the model is shown: the spec, marked when it is simulated."""
        if self.offline:
            return f"anthropic:{self.name} (offline simulator)"
        return self.spec


def _offline(spec: str, provider: str, name: str, info: ProviderInfo | None) -> ModelChoice:
    if info is None:
        needed = "ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY (or a *_BASE_URL)"
        what = "no provider key or base URL is set"
    else:
        needed = " or ".join((*info.key_envs, info.base_url_env))
        what = f"no {needed} is set for {spec}"
    simulated = name if provider == "anthropic" else OFFLINE_MODEL
    notice = (
        f"offline: {what}, so dive answers with its bundled Anthropic simulator "
        f"(demo replies, not a real model); set {needed} for real answers"
    )
    return ModelChoice(spec=spec, provider=provider, name=simulated, offline=True, notice=notice)


def choose_model(spec: str | None, environ: Mapping[str, str]) -> ModelChoice:
    """The model for ``spec`` (None: the first provider with credentials, else offline).

    Raises:
        UnknownProviderError: an unknown ``provider:`` prefix.
        UnknownModelError: a bare name no provider serves.
    """
    if spec is None:
        for name in _PREFERRED:
            info = _info(name)
            if credential_of(info, environ) is not None:
                return _online(f"{name}:{info.example}", name, info.example, info, environ)
        return _offline(f"anthropic:{OFFLINE_MODEL}", "anthropic", OFFLINE_MODEL, None)
    provider = provider_of(spec)
    name = spec.split(":", 1)[1] if spec.startswith(f"{provider}:") else spec
    info = _info(provider)
    if info.key_required and credential_of(info, environ) is None:
        return _offline(spec, provider, name, info)
    return _online(spec, provider, name, info, environ)


def _online(
    spec: str, provider: str, name: str, info: ProviderInfo, environ: Mapping[str, str]
) -> ModelChoice:
    base_url = None if info.default_base_url else environ.get(info.base_url_env) or None
    return ModelChoice(spec=spec, provider=provider, name=name, base_url=base_url)
