"""Generation, tool and safety options the API checks, some against the model of the path.

Checked after the conversation rules (``_validate``), first failure wins (sim choice). Keys are
read in either spelling (the SDK sends ``thinkingConfig``'s inner keys in snake_case). The
messages are modelled on the API's; those marked (sim) are the simulator's own wording.

1. ``generationConfig.thinkingConfig``:

   - ``thinkingLevel`` with ``thinkingBudget``: ``You can only set one of thinking budget and
     thinking level.`` (sim)
   - any thinking option on a model that does not think (Gemini 2.0, 1.5):
     ``Thinking is not enabled for models/<id>.``
   - ``thinkingLevel`` on a Gemini 2.5 model: ``Thinking level is not supported for this
     model.``
   - a level the model lacks (``MINIMAL`` on Gemini 3 Pro): ``Thinking level <L> is not
     supported for models/<id>.`` (sim)
   - ``thinkingBudget: 0`` on a model that always thinks (2.5 Pro, Gemini 3): ``Budget 0 is
     invalid. This model only works in thinking mode.``
   - another budget outside a 2.5 model's range (``-1`` is dynamic, always valid):
     ``The thinking budget <n> is invalid. Please choose a value between <a> and <b>.`` (sim)

2. ``toolConfig.functionCallingConfig``: ``mode`` is ``AUTO``, ``ANY``, ``NONE`` or
   ``VALIDATED``; ``allowedFunctionNames`` only with ``ANY`` or ``VALIDATED`` and each one a
   declared function (sim).
3. ``safetySettings``: known categories and thresholds, each category once (sim).
4. ``functionResponse.parts`` (multimodal function responses) only on Gemini 3 models:
   ``Multimodal function responses are not supported by models/<id>.`` (sim)
5. ``serviceTier`` is ``unspecified``, ``standard``, ``flex`` or ``priority`` (either case);
   ``labels`` maps strings to strings (sim).

Models the table does not know (tuned models, future families) get the checks that do not
depend on the model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dive.testing.gemini._errors import invalid_argument
from dive.testing.gemini._request import ParsedRequest, as_dict, as_list

__all__ = ["HARM_CATEGORIES", "HARM_THRESHOLDS", "check_options"]

HARM_CATEGORIES = frozenset(
    {
        "HARM_CATEGORY_HARASSMENT",
        "HARM_CATEGORY_HATE_SPEECH",
        "HARM_CATEGORY_SEXUALLY_EXPLICIT",
        "HARM_CATEGORY_DANGEROUS_CONTENT",
        "HARM_CATEGORY_CIVIC_INTEGRITY",
        "HARM_CATEGORY_JAILBREAK",
    }
)
HARM_THRESHOLDS = frozenset(
    {"BLOCK_LOW_AND_ABOVE", "BLOCK_MEDIUM_AND_ABOVE", "BLOCK_ONLY_HIGH", "BLOCK_NONE", "OFF"}
)
_MODES = ("AUTO", "ANY", "NONE", "VALIDATED")
_TYPES = "type.googleapis.com/google.ai.generativelanguage.v1beta"


@dataclass(frozen=True, slots=True)
class _Family:
    thinking: str  # "budget", "level", "none" or "unknown"
    levels: tuple[str, ...] = ()
    budgets: tuple[int, int] = (0, 0)
    can_disable: bool = False


_FAMILIES: tuple[tuple[str, _Family], ...] = (
    (r"gemini-3-pro", _Family("level", ("LOW", "HIGH"))),
    (r"gemini-3\.\d+-pro", _Family("level", ("LOW", "MEDIUM", "HIGH"))),
    (r"gemini-3(\.\d+)?-flash", _Family("level", ("MINIMAL", "LOW", "MEDIUM", "HIGH"))),
    (r"gemini-2\.5-pro", _Family("budget", budgets=(128, 32768))),
    (r"gemini-2\.5-flash-lite", _Family("budget", budgets=(512, 24576), can_disable=True)),
    (r"gemini-2\.5-flash", _Family("budget", budgets=(1, 24576), can_disable=True)),
    (r"gemini-(2\.0|1\.5|1\.0)", _Family("none")),
)


def _family(model: str) -> _Family:
    for pattern, family in _FAMILIES:
        if re.match(pattern, model):
            return family
    return _Family("unknown")


def _get(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    return obj[camel] if camel in obj else obj.get(snake)


def check_options(request: ParsedRequest, model: str) -> None:
    """Raise a 400 :class:`~dive.testing.gemini._errors.APIErrorAnswer` on the first broken rule."""
    family = _family(model)
    generation = as_dict(_get(request.body, "generationConfig", "generation_config")) or {}
    thinking = as_dict(_get(generation, "thinkingConfig", "thinking_config"))
    if thinking is not None:
        _check_thinking(thinking, family, model)
    _check_tool_config(request.body)
    _check_safety(request.body)
    _check_tier_and_labels(request.body)
    if family.thinking != "level":
        for content in request.contents:
            for part in content.parts:
                response = as_dict(part.get("functionResponse")) or {}
                if response.get("parts"):
                    raise invalid_argument(
                        f"Multimodal function responses are not supported by models/{model}."
                    )


def _check_thinking(config: Mapping[str, Any], family: _Family, model: str) -> None:
    level = _get(config, "thinkingLevel", "thinking_level")
    budget = _get(config, "thinkingBudget", "thinking_budget")
    if level is not None and budget is not None:
        raise invalid_argument("You can only set one of thinking budget and thinking level.")
    if family.thinking == "none" and (level is not None or budget not in (None, 0)):
        raise invalid_argument(f"Thinking is not enabled for models/{model}.")
    if level is not None:
        if family.thinking == "budget":
            raise invalid_argument("Thinking level is not supported for this model.")
        if family.thinking == "level" and str(level) not in family.levels:
            raise invalid_argument(f"Thinking level {level} is not supported for models/{model}.")
    if not isinstance(budget, int) or budget == -1:
        return
    if budget == 0:
        if family.thinking == "level" or (family.thinking == "budget" and not family.can_disable):
            raise invalid_argument("Budget 0 is invalid. This model only works in thinking mode.")
        return
    low, high = family.budgets
    if family.thinking == "budget" and not low <= budget <= high:
        raise invalid_argument(
            f"The thinking budget {budget} is invalid. Please choose a value between "
            f"{low} and {high}."
        )


def _declared(body: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for tool in as_list(body.get("tools")) or []:
        spec = as_dict(tool) or {}
        for declaration in (
            as_list(_get(spec, "functionDeclarations", "function_declarations")) or []
        ):
            name = (as_dict(declaration) or {}).get("name")
            if isinstance(name, str):
                names.add(name)
    return names


def _check_tool_config(body: Mapping[str, Any]) -> None:
    tool_config = as_dict(_get(body, "toolConfig", "tool_config")) or {}
    calling = as_dict(_get(tool_config, "functionCallingConfig", "function_calling_config"))
    if calling is None:
        return
    mode = calling.get("mode", "AUTO")
    if mode not in _MODES:
        raise invalid_argument(
            "Invalid value at 'tool_config.function_calling_config.mode' "
            f'({_TYPES}.FunctionCallingConfig.Mode), "{mode}"'
        )
    allowed = as_list(_get(calling, "allowedFunctionNames", "allowed_function_names"))
    if not allowed:
        return
    if mode not in ("ANY", "VALIDATED"):
        raise invalid_argument(
            "allowed_function_names may only be set when the function calling mode is ANY or "
            "VALIDATED."
        )
    declared = _declared(body)
    for name in allowed:
        if name not in declared:
            raise invalid_argument(
                f"allowed_function_names contains `{name}`, which is not the name of a "
                "declared function."
            )


_SERVICE_TIERS = ("unspecified", "standard", "flex", "priority")


def _check_tier_and_labels(body: Mapping[str, Any]) -> None:
    tier = _get(body, "serviceTier", "service_tier")
    if tier is not None and str(tier).lower() not in _SERVICE_TIERS:
        raise invalid_argument(
            f"Invalid value at 'service_tier' ({_TYPES}.ServiceTier), \"{tier}\""
        )
    labels = body.get("labels")
    if labels is None:
        return
    pairs = as_dict(labels)
    if pairs is None or not all(isinstance(v, str) for v in pairs.values()):
        raise invalid_argument(
            "Invalid JSON payload received. 'labels' must map strings to strings."
        )


def _check_safety(body: Mapping[str, Any]) -> None:
    seen: set[str] = set()
    for i, raw in enumerate(as_list(_get(body, "safetySettings", "safety_settings")) or []):
        setting = as_dict(raw) or {}
        category = setting.get("category")
        threshold = setting.get("threshold")
        if category not in HARM_CATEGORIES:
            raise invalid_argument(
                f"Invalid value at 'safety_settings[{i}].category' "
                f'({_TYPES}.HarmCategory), "{category}"'
            )
        if threshold not in HARM_THRESHOLDS:
            raise invalid_argument(
                f"Invalid value at 'safety_settings[{i}].threshold' "
                f'({_TYPES}.SafetySetting.HarmBlockThreshold), "{threshold}"'
            )
        if category in seen:
            raise invalid_argument(f"safety_settings names category {category} more than once.")
        seen.add(str(category))
