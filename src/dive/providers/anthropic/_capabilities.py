"""What each Claude model family accepts: one table, not scattered checks.

Unknown model names work with conservative capabilities (no adaptive-only assumptions, no
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
    """Per-family request rules.

    Attributes:
        family: the family's label (in warnings and errors).
        max_output_tokens: the largest ``max_tokens`` the family accepts.
        default_max_tokens: ``max_tokens`` when the settings give none.
        thinking: the family can think (extended thinking).
        adaptive_only: thinking is adaptive only (a budget is refused).
        effort: the family takes an ``effort`` setting.
        efforts: the effort levels it accepts (others are clamped or refused).
        temperature: the family accepts ``temperature``.
        known: the model name matched a row of the table (False: conservative defaults).
    """

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


@cache
def capabilities_for(model: str) -> Capabilities:
    """The capabilities of ``model``; unknown names get conservative ones and a warning.

    Args:
        model: the model id (``claude-sonnet-4-6``, ...).
    """
    name = model.lower()
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
