"""``ModelRequest`` settings → ``GenerateContentConfig`` fields (snake_case, as the SDK takes them).

Thinking follows the family's row of the capability table (``_capabilities``):

- Gemini 2.5 (budget families): ``thinking="disabled"`` (or ``reasoning_budget=0``) sends
  ``thinking_budget: 0`` where the family can stop thinking; ``reasoning_budget`` is sent
  when in the family's range and wins over ``reasoning_effort``, which maps to a budget
  (``low`` 1024, ``medium`` 8192, ``high`` and up per family); ``thinking="enabled"`` /
  ``"adaptive"`` alone ask for dynamic thinking (``-1``).
- Gemini 3 (level families): ``reasoning_effort`` becomes ``thinking_level`` when the family
  has that level (``max`` is its highest) and wins over ``reasoning_budget``, which is sent as
  ``thinking_budget`` otherwise; thinking cannot be turned off.
- Models that do not think (2.0, 1.5, Gemma) refuse every thinking setting but ``disabled``.
- ``include_thoughts`` is ``thinking_display != "omitted"`` whenever thinking is asked for
  (or ``thinking_display`` is given).

A setting the model cannot honour raises ``UnsupportedSettingError`` before any request; with
``ModelSettings(strict=False)`` it is dropped and a warning is logged (to
``dive.providers.google``, once per model). The same goes for ``parallel_tool_calls=False``
(Gemini has no such switch), ``speed="fast"``, ``mcp_servers``, ``caching=False`` (Gemini
caches implicitly, with no switch) and a ``service_tier`` other than ``flex``, ``standard`` or
``priority``.

Sent as well: ``service_tier`` as ``service_tier`` (``serviceTier`` on the wire) and
``metadata`` as ``labels``. Caching is implicit: ``caching=True`` sends nothing, and
``cache_ttl`` is not sent (implicit caching has no TTL; an explicit cache made with the SDK
is named with ``GeminiSettings(extra_config={"cached_content": ...})``).

Tool choice: ``tool`` → ``ANY`` with the one name, ``any`` → ``ANY``, ``none`` → ``NONE``,
``auto`` → ``AUTO``; ``GeminiSettings`` adds ``VALIDATED``, several allowed names, safety
settings, Gemini's own tools and extra config fields (``_settings``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from dive.errors import UnsupportedSettingError, UserError
from dive.llm import ModelRequest, ModelSettings
from dive.providers.google._capabilities import GeminiCapabilities, capabilities_for
from dive.providers.google._settings import GeminiSettings, thaw

__all__ = ["WarnOnce", "build_config", "check_settings", "thinking_config"]

log = logging.getLogger("dive.providers.google")

Json = dict[str, Any]
Warn = Callable[[str], None]
Refuse = Callable[[str], None]

_PASS_THROUGH = GeminiCapabilities(family="unknown", thinking="unknown", known=False)
_NO_SETTINGS = GeminiSettings()


def _log_warning(message: str) -> None:
    log.warning("%s", message)


class WarnOnce:
    """Logs each distinct warning once (one per model instance)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def __call__(self, message: str) -> None:
        if message not in self._seen:
            self._seen.add(message)
            _log_warning(message)


def _refuser(s: ModelSettings, warn: Warn) -> Refuse:
    def refuse(message: str) -> None:
        if s.strict:
            raise UnsupportedSettingError(
                f"{message}. Change the setting, or pass ModelSettings(strict=False) to drop "
                "it with a warning"
            )
        warn(f"{message}; the setting is dropped (strict=False)")

    return refuse


def _caps(model: str | None) -> GeminiCapabilities:
    return capabilities_for(model) if model else _PASS_THROUGH


# --- thinking ----------------------------------------------------------------------------------


def _budget(s: ModelSettings, caps: GeminiCapabilities, name: str, refuse: Refuse) -> int | None:
    budget = s.reasoning_budget or None
    if budget is not None:
        if caps.min_budget <= budget <= caps.max_budget:
            return budget
        refuse(
            f"reasoning_budget={budget} is outside what {name} takes "
            f"({caps.min_budget} to {caps.max_budget} tokens)"
        )
    if s.reasoning_effort is not None:
        return caps.effort_budgets[s.reasoning_effort]
    if s.thinking in ("enabled", "adaptive") or budget is not None:
        return -1  # dynamic thinking
    return None


def _level(s: ModelSettings, caps: GeminiCapabilities, name: str, refuse: Refuse) -> str | None:
    effort = s.reasoning_effort
    if effort is None:
        return None
    if effort == "max":
        return caps.levels[-1]
    if effort in caps.levels:
        return effort
    refuse(
        f"reasoning_effort={effort!r} is not a thinking level of {name} "
        f"(it takes: {', '.join(caps.levels)})"
    )
    return None


def _off(caps: GeminiCapabilities, name: str, refuse: Refuse) -> bool:
    """Whether ``thinking_budget: 0`` may be sent; refuses when the model always thinks."""
    if caps.thinking == "unknown" or caps.can_disable:
        return True
    if caps.thinking == "budget":
        hint = f"the least it takes is reasoning_budget={caps.min_budget}"
    else:
        hint = f"the least it takes is reasoning_effort={caps.levels[0]!r}"
    refuse(f"{name} cannot turn thinking off ({hint})")
    return False


def thinking_config(
    s: ModelSettings, caps: GeminiCapabilities, name: str, refuse: Refuse
) -> Json | None:
    """The ``thinking_config`` for ``s`` on a model with ``caps`` (None: send none)."""
    asked = (
        s.thinking in ("enabled", "adaptive")
        or bool(s.reasoning_budget)
        or s.reasoning_effort is not None
    )
    if caps.thinking == "none":
        if asked or s.thinking_display is not None:
            refuse(
                f"{name} does not think: thinking, reasoning_budget, reasoning_effort and "
                "thinking_display do not apply (use a Gemini 2.5 or 3 model)"
            )
        return None
    if (s.thinking == "disabled" or s.reasoning_budget == 0) and _off(caps, name, refuse):
        return {"thinking_budget": 0}
    if not asked and s.thinking_display is None:
        return None
    out: Json = {"include_thoughts": s.thinking_display != "omitted"}
    if caps.thinking == "budget":
        budget = _budget(s, caps, name, refuse)
        if budget is not None:
            out["thinking_budget"] = budget
    elif caps.thinking == "level":
        level = _level(s, caps, name, refuse)
        if level is not None:
            out["thinking_level"] = level.upper()
        elif s.reasoning_budget:
            out["thinking_budget"] = s.reasoning_budget
    elif s.reasoning_budget:
        out["thinking_budget"] = s.reasoning_budget
    elif s.reasoning_effort is not None:
        out["thinking_level"] = (
            "HIGH" if s.reasoning_effort == "max" else s.reasoning_effort.upper()
        )
    return out


# --- other settings ----------------------------------------------------------------------------


def _unsupported(s: ModelSettings, refuse: Refuse) -> None:
    tc = s.tool_choice
    if s.parallel_tool_calls is False or (tc is not None and tc.disable_parallel):
        refuse(
            "the Gemini API has no switch to turn parallel function calls off "
            "(parallel_tool_calls=False / ToolChoice(disable_parallel=True)); leave it unset, "
            "and run calls one at a time with Agent(parallel_tool_execution=False) if needed"
        )
    if s.speed == "fast":
        refuse("speed='fast' is an Anthropic fast mode; Gemini has none")
    if s.mcp_servers:
        refuse(
            "the Gemini API has no MCP connector (mcp_servers); connect the server with "
            "dive.mcp (MCPServerStreamableHTTP) and pass it as a toolset instead"
        )
    if s.caching is False:
        refuse(
            "caching=False cannot be honoured: Gemini caches prompt prefixes implicitly and "
            "has no switch to turn that off; leave caching unset"
        )
    if s.service_tier is not None and service_tier(s) is None:
        refuse(
            f"service_tier {s.service_tier!r} is not a Gemini service tier; use one of "
            f"{', '.join(SERVICE_TIERS)}"
        )
    if s.context_management is not None:
        refuse(
            "context_management is Anthropic's server-side context editing and compaction; "
            "Gemini has none (use dive.compaction for client-side compaction)"
        )


SERVICE_TIERS = ("flex", "standard", "priority")


def service_tier(s: ModelSettings) -> str | None:
    """``s.service_tier`` as Gemini's ``serviceTier`` (lower case), or None if it has none."""
    tier = (s.service_tier or "").lower()
    return tier if tier in SERVICE_TIERS else None


def check_settings(
    s: ModelSettings, model: str | None = None, *, warn: Warn = _log_warning
) -> Json | None:
    """Refuse settings ``model`` cannot honour; return its ``thinking_config`` (or None).

    Raises:
        UnsupportedSettingError: a setting the model cannot honour (``strict=True``).
    """
    refuse = _refuser(s, warn)
    _unsupported(s, refuse)
    caps = _caps(model)
    return thinking_config(s, caps, model or "this model", refuse)


def _tool_config(request: ModelRequest, gs: GeminiSettings) -> Json | None:
    declared = [d.name for d in request.tools]
    if not declared:
        return None
    tc = request.settings.tool_choice
    allowed = list(gs.allowed_function_names) if gs.allowed_function_names else None
    mode = gs.function_calling_mode
    if tc is not None and tc.type == "tool":
        if allowed is not None and tc.name not in allowed:
            raise UnsupportedSettingError(
                f"tool_choice names {tc.name!r}, which GeminiSettings.allowed_function_names "
                f"({', '.join(allowed)}) excludes; allow it or choose another tool"
            )
        mode, allowed = "ANY", [str(tc.name)]
    elif tc is not None and tc.type in ("any", "none"):
        mode = tc.type.upper()
    elif mode is None and (allowed or tc is not None):
        mode = "VALIDATED" if allowed else "AUTO"
    if mode is None:
        return None
    fcc: Json = {"mode": mode}
    if allowed and mode in ("ANY", "VALIDATED"):
        unknown = [n for n in allowed if n not in declared]
        if unknown:
            raise UserError(
                f"allowed function name(s) {', '.join(unknown)} are not tools of this request "
                f"(its tools: {', '.join(declared)})"
            )
        fcc["allowed_function_names"] = allowed
    return {"function_calling_config": fcc}


def _tools(request: ModelRequest, gs: GeminiSettings) -> list[Json]:
    tools: list[Json] = []
    if request.tools:
        declarations = [
            {
                "name": d.name,
                "description": d.description,
                "parameters_json_schema": thaw(d.input_schema),
            }
            for d in request.tools
        ]
        tools.append({"function_declarations": declarations})
    for on, key in (
        (gs.code_execution, "code_execution"),
        (gs.google_search, "google_search"),
        (gs.url_context, "url_context"),
    ):
        if on:
            tools.append({key: {}})
    return tools


def build_config(
    request: ModelRequest,
    extra_system: Sequence[str] = (),
    *,
    model: str | None = None,
    gemini: GeminiSettings | None = None,
    warn: Warn = _log_warning,
) -> Json:
    """``GenerateContentConfig`` fields for ``request`` (snake_case, as the SDK's types take them).

    Args:
        request: the provider-neutral request.
        extra_system: text of system-role messages of the history, appended to the system
            instruction.
        model: the model id, which picks the capability row (None: settings are sent as
            given).
        gemini: Gemini-specific settings.
        warn: receives each warning about a dropped setting (``strict=False``).

    Raises:
        UnsupportedSettingError: a setting the model cannot honour (``strict=True``).
        UserError: allowed function names that are not tools of the request.
    """
    s = request.settings
    gs = gemini or _NO_SETTINGS
    config: Json = {}
    system = "\n\n".join(t for t in (request.system, *extra_system) if t)
    if system:
        config["system_instruction"] = system
    tools = _tools(request, gs)
    if tools:
        config["tools"] = tools
    tool_config = _tool_config(request, gs)
    if tool_config is not None:
        config["tool_config"] = tool_config
    for key, value in (
        ("temperature", s.temperature),
        ("top_p", s.top_p),
        ("top_k", s.top_k),
        ("max_output_tokens", s.max_tokens),
        ("presence_penalty", s.presence_penalty),
        ("frequency_penalty", s.frequency_penalty),
    ):
        if value is not None:
            config[key] = value
    if s.stop_sequences:
        config["stop_sequences"] = list(s.stop_sequences)
    if s.response_schema is not None:
        config["response_mime_type"] = "application/json"
        config["response_json_schema"] = thaw(s.response_schema)
    thinking = check_settings(s, model, warn=warn)
    if thinking is not None:
        config["thinking_config"] = thinking
    if gs.safety_settings:
        config["safety_settings"] = [x.to_config() for x in gs.safety_settings]
    tier = service_tier(s)
    if tier is not None:
        config["service_tier"] = tier
    if s.metadata:
        config["labels"] = dict(s.metadata)
    if s.request_headers:
        config["http_options"] = {"headers": dict(s.request_headers)}
    config.update(thaw(gs.extra_config))
    return config
