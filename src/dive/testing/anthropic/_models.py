"""Per-model facts the simulator needs (wire-apis.md A7, A8, A9 item 6).

Models are looked up by family: the model id without an ``@version`` suffix, a trailing
``-YYYYMMDD`` date or a trailing ``-latest``. Unknown models get the conservative defaults.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = [
    "DEFAULT_MIN_CACHEABLE_TOKENS",
    "accepts_system_role",
    "adaptive_only",
    "min_cacheable_tokens",
    "model_family",
    "rejects_disabled_thinking",
    "rejects_temperature",
]

_DATE_SUFFIX = re.compile(r"-\d{8}$")

DEFAULT_MIN_CACHEABLE_TOKENS = 1024
"""The minimum cacheable prefix for models the table does not name."""

_MIN_CACHEABLE: Mapping[str, int] = {
    "claude-opus-4-8": 4096,
    "claude-opus-4-7": 4096,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-haiku-4-5": 4096,
    "claude-fable-5": 2048,
    "claude-sonnet-4-6": 2048,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
    "claude-sonnet-4-5": 1024,
    "claude-sonnet-4": 1024,
    "claude-sonnet-4-0": 1024,
    "claude-3-7-sonnet": 1024,
    "claude-opus-4-1": 1024,
    "claude-opus-4": 1024,
    "claude-opus-4-0": 1024,
}

_ADAPTIVE_ONLY = frozenset(
    {"claude-opus-4-7", "claude-opus-4-8", "claude-sonnet-5", "claude-fable-5"}
)
_SYSTEM_ROLE = frozenset({"claude-opus-4-8"})
_THINKING_ALWAYS = frozenset({"claude-fable-5"})


def model_family(model: str) -> str:
    """The model id without ``@version``, a trailing ``-YYYYMMDD`` or a trailing ``-latest``."""
    family = model.split("@", 1)[0]
    family = _DATE_SUFFIX.sub("", family)
    return family.removesuffix("-latest")


def min_cacheable_tokens(model: str, overrides: Mapping[str, int] | None = None) -> int:
    """The minimum prefix (in simulated tokens) a breakpoint needs before it is cached.

    ``overrides`` is looked up by exact model id first, then by family.
    """
    family = model_family(model)
    if overrides:
        if model in overrides:
            return overrides[model]
        if family in overrides:
            return overrides[family]
    return _MIN_CACHEABLE.get(family, DEFAULT_MIN_CACHEABLE_TOKENS)


def adaptive_only(model: str) -> bool:
    """Whether ``{"type": "enabled"}`` thinking is rejected (Opus 4.7/4.8, Sonnet 5, Fable 5)."""
    return model_family(model) in _ADAPTIVE_ONLY


def rejects_temperature(model: str) -> bool:
    """Whether the model rejects any ``temperature`` (Opus 4.7+, Sonnet 5, Fable 5)."""
    return model_family(model) in _ADAPTIVE_ONLY


def rejects_disabled_thinking(model: str) -> bool:
    """Whether the model rejects even ``{"type": "disabled"}`` thinking (Fable 5)."""
    return model_family(model) in _THINKING_ALWAYS


def accepts_system_role(model: str) -> bool:
    """Whether ``role: "system"`` is accepted mid-conversation (Opus 4.8+)."""
    return model_family(model) in _SYSTEM_ROLE
