"""Gemini-specific settings: what only the Gemini API has, typed, checked when built.

``GeminiModel(model, settings=GeminiSettings(...))`` applies them to every request, next to the
provider-neutral ``ModelSettings``::

    GeminiSettings(
        safety_settings=(
            SafetySetting(category="HARM_CATEGORY_HARASSMENT", threshold="BLOCK_NONE"),
        ),
        function_calling_mode="VALIDATED",
        allowed_function_names=("search", "fetch"),
        code_execution=True,
        extra_config={"media_resolution": "MEDIA_RESOLUTION_LOW"},
    )
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal, cast

from google.genai import types

from dive.errors import UserError
from dive.messages.codec import JSONValue, empty, freeze_mapping

__all__ = ["FunctionCallingMode", "GeminiSettings", "SafetySetting", "thaw"]

FunctionCallingMode = Literal["AUTO", "ANY", "NONE", "VALIDATED"]
_MODES = ("AUTO", "ANY", "NONE", "VALIDATED")


def _names(enum: type[Enum]) -> tuple[str, ...]:
    return tuple(str(m.value) for m in enum if not str(m.value).endswith("_UNSPECIFIED"))


_CATEGORIES = _names(types.HarmCategory)
_THRESHOLDS = _names(types.HarmBlockThreshold)
_METHODS = _names(types.HarmBlockMethod)


def _member(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise UserError(f"SafetySetting {what} {value!r} is not one of: {', '.join(allowed)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class SafetySetting:
    """One entry of the request's ``safetySettings``: block a harm category from a threshold on.

    Attributes:
        category: a ``HarmCategory`` name, e.g. ``HARM_CATEGORY_HARASSMENT``,
            ``HARM_CATEGORY_HATE_SPEECH``, ``HARM_CATEGORY_SEXUALLY_EXPLICIT``,
            ``HARM_CATEGORY_DANGEROUS_CONTENT``.
        threshold: a ``HarmBlockThreshold`` name: ``BLOCK_LOW_AND_ABOVE``,
            ``BLOCK_MEDIUM_AND_ABOVE``, ``BLOCK_ONLY_HIGH``, ``BLOCK_NONE`` or ``OFF``.
        method: ``SEVERITY`` or ``PROBABILITY`` (Vertex AI only; the Gemini API refuses it).
    """

    category: str
    threshold: str
    method: str | None = None

    def __post_init__(self) -> None:
        _member(self.category, _CATEGORIES, "category")
        _member(self.threshold, _THRESHOLDS, "threshold")
        if self.method is not None:
            _member(self.method, _METHODS, "method")

    def to_config(self) -> dict[str, str]:
        """The entry as ``GenerateContentConfig.safety_settings`` takes it."""
        out = {"category": self.category, "threshold": self.threshold}
        if self.method is not None:
            out["method"] = self.method
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class GeminiSettings:
    """Request settings only the Gemini API has, applied by ``GeminiModel`` to every request.

    How they combine with ``ModelSettings.tool_choice``: a tool choice of ``tool`` (one named
    function, which must be allowed), ``any`` or ``none`` wins over ``function_calling_mode``;
    with ``auto`` or no tool choice, ``function_calling_mode`` decides. Allowed names apply
    with ``ANY`` and ``VALIDATED`` (and make ``VALIDATED`` the default mode).

    Attributes:
        safety_settings: ``safetySettings``, one per harm category.
        function_calling_mode: ``toolConfig.functionCallingConfig.mode``: ``AUTO`` (the API's
            default), ``ANY`` (always a function call), ``NONE`` (never), or ``VALIDATED``
            (text or a call that is checked against its declaration).
        allowed_function_names: restrict calls to these declared functions
            (``allowedFunctionNames``); every name must be a tool of the request.
        code_execution: declare Gemini's code execution tool (its code and results come back as
            ``ServerToolCall`` / ``ServerToolResult`` blocks).
        google_search: declare grounding with Google Search (the grounding metadata comes back
            as an ``UnknownBlock`` of type ``grounding_metadata``).
        url_context: declare the URL context tool.
        extra_config: more ``GenerateContentConfig`` fields (snake_case, as the SDK takes
            them), applied last: a key given here replaces what dive maps, e.g.
            ``{"media_resolution": "MEDIA_RESOLUTION_LOW"}`` or
            ``{"response_modalities": ["TEXT", "IMAGE"]}``. Checked by the SDK when a request
            is built; a field it refuses raises ``UserError``.

    Raises:
        UserError: an unknown mode, duplicate safety categories, or allowed names with a mode
            other than ``ANY`` / ``VALIDATED``.
    """

    safety_settings: tuple[SafetySetting, ...] = ()
    function_calling_mode: FunctionCallingMode | None = None
    allowed_function_names: tuple[str, ...] | None = None
    code_execution: bool = False
    google_search: bool = False
    url_context: bool = False
    extra_config: Mapping[str, JSONValue] = field(default_factory=empty)

    def __post_init__(self) -> None:
        object.__setattr__(self, "safety_settings", tuple(self.safety_settings))
        categories = [s.category for s in self.safety_settings]
        repeated = sorted({c for c in categories if categories.count(c) > 1})
        if repeated:
            raise UserError(f"safety_settings name {', '.join(repeated)} more than once")
        mode = self.function_calling_mode
        if mode is not None and mode not in _MODES:
            raise UserError(f"function_calling_mode {mode!r} is not one of: {', '.join(_MODES)}")
        names = self.allowed_function_names
        if names is not None:
            names = tuple(names)
            object.__setattr__(self, "allowed_function_names", names)
            if not names or not all(isinstance(n, str) and n for n in names):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise UserError("allowed_function_names must be a non-empty tuple of names")
            if mode in ("AUTO", "NONE"):
                raise UserError(
                    f"allowed_function_names cannot be combined with function_calling_mode="
                    f"{mode!r}: the API takes them with ANY or VALIDATED only"
                )
        object.__setattr__(self, "extra_config", freeze_mapping(self.extra_config))


def thaw(value: Any) -> Any:
    """``value`` with read-only mappings and tuples turned into dicts and lists (for the SDK)."""
    if isinstance(value, Mapping):
        items = cast("Mapping[str, Any]", value).items()
        return {k: thaw(v) for k, v in items}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in cast("Sequence[Any]", value)]
    return value
