"""Stop-reason classification.

``classify_stop_reason`` fails closed where a wrong guess would act (an unknown reason never
runs tool calls) and open where a wrong guess would only report (an unknown reason with text
only is a completed answer).
"""

from __future__ import annotations

from typing import Literal

__all__ = ["STOP_KINDS", "StopKind", "classify_stop_reason"]

StopKind = Literal[
    "finished",
    "tool_use",
    "output_limit",
    "context_limit",
    "refusal",
    "pause",
    "incomplete",
    "other",
]

STOP_KINDS: tuple[StopKind, ...] = (
    "finished",
    "tool_use",
    "output_limit",
    "context_limit",
    "refusal",
    "pause",
    "incomplete",
    "other",
)

_TABLE: dict[str, StopKind] = {}
for _kind, _raws in (
    ("finished", ("end_turn", "stop_sequence", "stop")),
    ("tool_use", ("tool_use", "tool_calls", "function_call")),
    ("output_limit", ("max_tokens", "length", "max_output_tokens")),
    ("context_limit", ("model_context_window_exceeded", "model_length")),
    (
        "refusal",
        (
            "refusal",
            "content_filter",
            "safety",
            "recitation",
            "blocklist",
            "prohibited_content",
            "spii",
            "image_safety",
            "image_prohibited_content",
            "image_recitation",
        ),
    ),
    ("pause", ("pause_turn",)),
    (
        "incomplete",
        (
            "error",
            "incomplete",
            "cancelled",
            "timeout",
            "malformed_function_call",
            "unexpected_tool_call",
            "too_many_tool_calls",
        ),
    ),
):
    for _raw in _raws:
        _TABLE[_raw] = _kind  # pyright: ignore[reportArgumentType]


def classify_stop_reason(raw: str | None) -> StopKind:
    """Map a provider's raw stop reason (case-insensitive) to a :data:`StopKind`.

    Args:
        raw: the provider's stop reason, or None.
    """
    if not raw:
        return "other"
    return _TABLE.get(raw.strip().lower(), "other")
