"""What each Gemini model family accepts: one table, not scattered checks.

Gemini 2.5 models take a token budget (``thinkingBudget``; ``-1`` asks for dynamic thinking,
``0`` turns thinking off where the family allows it); Gemini 3 models take a level
(``thinkingLevel``) and always think; older models (2.0, 1.5) and Gemma do not think. Gemini 3
models also accept images and PDFs inside a function response (``functionResponse.parts``).

Model names are matched after any path prefix (``models/``, ``publishers/google/models/``).
An unknown name works with pass-through rules (settings sent as given, the API decides) and
one logged warning per name.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

from dive.messages.codec import empty

__all__ = ["EFFORTS", "GeminiCapabilities", "capabilities_for"]

log = logging.getLogger("dive.providers.google")

EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max")
"""``ModelSettings.reasoning_effort`` values, lowest first."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GeminiCapabilities:
    """Per-family request rules.

    Attributes:
        family: the family's name, used in error messages (``gemini-2.5-pro``, ``gemini-3``…).
        thinking: how thinking is controlled: ``budget`` (``thinkingBudget``), ``level``
            (``thinkingLevel``), ``none`` (the model does not think) or ``unknown``.
        can_disable: thinking can be turned off (``thinkingBudget: 0``).
        min_budget: the smallest positive budget the family takes.
        max_budget: the largest budget the family takes.
        effort_budgets: the budget each ``reasoning_effort`` maps to (budget families).
        levels: the thinking levels the family takes, lowest first (level families).
        function_response_media: images and PDFs may travel inside a function response.
        known: False for a model name the table does not know.
    """

    family: str
    thinking: Literal["budget", "level", "none", "unknown"]
    can_disable: bool = False
    min_budget: int = 0
    max_budget: int = 0
    effort_budgets: Mapping[str, int] = field(default_factory=empty)
    levels: tuple[str, ...] = ()
    function_response_media: bool = False
    known: bool = True


def _budgets(minimal: int, high: int, top: int) -> Mapping[str, int]:
    return {
        "minimal": minimal,
        "low": 1024,
        "medium": 8192,
        "high": high,
        "xhigh": top,
        "max": top,
    }


_TABLE: tuple[tuple[str, GeminiCapabilities], ...] = (
    (
        r"gemini-3-pro",
        GeminiCapabilities(
            family="gemini-3-pro",
            thinking="level",
            levels=("low", "high"),
            function_response_media=True,
        ),
    ),
    (
        r"gemini-3\.\d+-pro",
        GeminiCapabilities(
            family="gemini-3.x-pro",
            thinking="level",
            levels=("low", "medium", "high"),
            function_response_media=True,
        ),
    ),
    (
        r"gemini-3(\.\d+)?-flash",
        GeminiCapabilities(
            family="gemini-3-flash",
            thinking="level",
            levels=("minimal", "low", "medium", "high"),
            function_response_media=True,
        ),
    ),
    (
        r"gemini-2\.5-pro",
        GeminiCapabilities(
            family="gemini-2.5-pro",
            thinking="budget",
            min_budget=128,
            max_budget=32768,
            effort_budgets=_budgets(128, 24576, 32768),
        ),
    ),
    (
        r"gemini-2\.5-flash-lite",
        GeminiCapabilities(
            family="gemini-2.5-flash-lite",
            thinking="budget",
            can_disable=True,
            min_budget=512,
            max_budget=24576,
            effort_budgets=_budgets(512, 16384, 24576),
        ),
    ),
    (
        r"gemini-2\.5-flash",
        GeminiCapabilities(
            family="gemini-2.5-flash",
            thinking="budget",
            can_disable=True,
            min_budget=1,
            max_budget=24576,
            effort_budgets=_budgets(512, 16384, 24576),
        ),
    ),
    (r"gemini-(2\.0|1\.5|1\.0)", GeminiCapabilities(family="gemini-2.0", thinking="none")),
    (r"gemma-", GeminiCapabilities(family="gemma", thinking="none")),
)

_UNKNOWN = GeminiCapabilities(family="unknown", thinking="unknown", known=False)


@cache
def capabilities_for(model: str) -> GeminiCapabilities:
    """The capabilities of ``model``; an unknown name gets pass-through rules and a warning.

    Args:
        model: the model id (``gemini-2.5-flash``, ...).
    """
    name = model.lower().rsplit("/", 1)[-1]
    for pattern, caps in _TABLE:
        if re.match(pattern, name):
            return caps
    log.warning(
        "dive does not know the Gemini model %r; thinking settings are sent as given "
        "(thinking_budget, thinking_level) and the API decides",
        model,
    )
    return _UNKNOWN
