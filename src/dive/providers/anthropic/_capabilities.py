"""What each Claude model family accepts: one table, not scattered checks.

Bedrock ids (``anthropic.claude-…``, ``us.anthropic.claude-…``) and Vertex ids
(``claude-…@date``) are looked up by their Claude name. Unknown model names work with
conservative capabilities (no adaptive-only assumptions, no
effort, budgets allowed) and a warning.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from functools import cache

__all__ = ["Capabilities", "capabilities_for"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """Per-family request rules."""

    family: str
    max_output_tokens: int = 8192
    default_max_tokens: int = 4096
    thinking: bool = True
    adaptive_only: bool = False
    effort: bool = False
    efforts: tuple[str, ...] = ("low", "medium", "high")
    temperature: bool = True
    known: bool = True


_TABLE: tuple[tuple[str, Capabilities], ...] = (
    (
        r"claude-(opus-4-[78]|sonnet-5|fable-5)",
        Capabilities(
            family="adaptive",
            max_output_tokens=64000,
            default_max_tokens=8192,
            adaptive_only=True,
            effort=True,
            efforts=("low", "medium", "high", "xhigh", "max"),
            temperature=False,
        ),
    ),
    (
        r"claude-(opus-4-[56]|sonnet-4-6)",
        Capabilities(
            family="claude-4.5+",
            max_output_tokens=64000,
            default_max_tokens=8192,
            effort=True,
            efforts=("low", "medium", "high", "xhigh", "max"),
        ),
    ),
    (
        r"claude-(sonnet-4-5|haiku-4-5|opus-4-1|opus-4|sonnet-4)",
        Capabilities(
            family="claude-4",
            max_output_tokens=64000,
            default_max_tokens=8192,
        ),
    ),
    (r"claude-3-7-sonnet", Capabilities(family="claude-3.7", max_output_tokens=64000)),
    (r"claude-3", Capabilities(family="claude-3", thinking=False)),
)

_UNKNOWN = Capabilities(family="unknown", known=False)
_PLATFORM_PREFIX = re.compile(r"^(?:[a-z]{2,4}\.)?anthropic\.")  # Bedrock: [us.]anthropic.claude-…


@cache
def capabilities_for(model: str) -> Capabilities:
    """The capabilities of ``model``; unknown names get conservative ones and a warning."""
    name = _PLATFORM_PREFIX.sub("", model.lower())
    for pattern, caps in _TABLE:
        if re.match(pattern, name):
            return caps
    warnings.warn(
        f"dive does not know the Anthropic model {model!r}; using conservative capabilities "
        "(budgeted thinking allowed, no effort setting, sampling parameters passed through)",
        UserWarning,
        stacklevel=3,
    )
    return _UNKNOWN
