"""What each Claude model family accepts: one table, not scattered checks.

A model's family is its id without an ``@version`` suffix or a trailing ``-YYYYMMDD`` date,
and for Bedrock ids without the ``[us.]anthropic.`` prefix and the ``-v1:0`` suffix.
Per family: whether sampling parameters are accepted, whether thinking takes a budget or is
adaptive only, and which effort levels exist (``efforts``; ``clamp`` maps a missing level to
the one sent instead, and a family without effort drops it). Unknown ids work with
conservative capabilities (budgets allowed, no effort, sampling passed through); the request
mapping warns about them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType

__all__ = ["Capabilities", "capabilities_for", "model_family"]

_FULL = ("low", "medium", "high", "xhigh", "max")


@dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """Per-family request rules.

    Attributes:
        family: the family's label (in warnings and errors).
        max_output_tokens: the largest ``max_tokens`` the family accepts.
        default_max_tokens: ``max_tokens`` when the settings give none.
        thinking: the family can think (extended thinking).
        adaptive_only: thinking is adaptive only (a budget is refused).
        effort: the family takes an ``effort`` setting.
        efforts: the effort levels it accepts.
        temperature: the family accepts ``temperature``.
        known: the model name matched a row of the table (False: conservative defaults).
        clamp: effort levels the family lacks, mapped to the level sent instead (``xhigh`` →
            ``high``).
    """

    family: str
    max_output_tokens: int = 8192
    default_max_tokens: int = 4096
    thinking: bool = True
    adaptive_only: bool = False
    effort: bool = False
    efforts: tuple[str, ...] = ("low", "medium", "high")
    clamp: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    temperature: bool = True
    known: bool = True


_ADAPTIVE = Capabilities(
    family="adaptive",
    max_output_tokens=64000,
    default_max_tokens=8192,
    adaptive_only=True,
    effort=True,
    efforts=_FULL,
    temperature=False,
)
_CLAUDE_45 = Capabilities(
    family="claude-4.5+",
    max_output_tokens=64000,
    default_max_tokens=8192,
    effort=True,
    efforts=("low", "medium", "high", "max"),
    clamp=MappingProxyType({"xhigh": "high"}),
)
_CLAUDE_4 = Capabilities(family="claude-4", max_output_tokens=64000, default_max_tokens=8192)

# (family pattern, capabilities); a pattern matches the whole family, first match wins
_TABLE: tuple[tuple[str, Capabilities], ...] = (
    (r"claude-(opus-4-[78]|sonnet-5|fable-5)", _ADAPTIVE),
    (r"claude-(opus-4-[56]|sonnet-4-6)", _CLAUDE_45),
    (r"claude-(sonnet-4(-[05])?|opus-4(-[01])?|haiku-4-5)", _CLAUDE_4),
    (r"claude-haiku.*", _CLAUDE_4),
    (r"claude-3-7-sonnet.*", Capabilities(family="claude-3.7", max_output_tokens=64000)),
    (r"claude-(3|2|instant).*", Capabilities(family="claude-3", thinking=False)),
)

_UNKNOWN = Capabilities(family="unknown", known=False)
_PLATFORM_PREFIX = re.compile(r"^(?:[a-z]{2,4}\.)?anthropic\.")  # Bedrock: [us.]anthropic.claude-…
_PLATFORM_SUFFIX = re.compile(r"-v\d+(?::\d+)?$")  # Bedrock: …-v1:0

_DATE = re.compile(r"-(\d{8}|latest)$")


def model_family(model: str) -> str:
    """``model`` without ``@version``, a trailing ``-YYYYMMDD`` or ``-latest``, lowercased.

    A Bedrock id loses its ``[us.]anthropic.`` prefix and ``-v1:0`` suffix first.
    """
    name = _PLATFORM_SUFFIX.sub("", _PLATFORM_PREFIX.sub("", model.lower()))
    return _DATE.sub("", name.split("@", 1)[0])


@cache
def capabilities_for(model: str) -> Capabilities:
    """The capabilities of ``model``; unknown ids get conservative ones (``known=False``).

    Args:
        model: the model id (``claude-sonnet-4-6``, ...).
    """
    family = model_family(model)
    for pattern, caps in _TABLE:
        if re.fullmatch(pattern, family):
            return caps
    return _UNKNOWN
