"""Stop-reason classification (turns.md §4)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dive.llm import STOP_KINDS, ModelResponse, StopKind, classify_stop_reason

# The §4 table, verbatim: kind -> raw values.
TABLE: dict[StopKind, tuple[str, ...]] = {
    "finished": ("end_turn", "stop_sequence", "stop"),
    "tool_use": ("tool_use", "tool_calls", "function_call"),
    "output_limit": ("max_tokens", "length", "max_output_tokens"),
    "context_limit": ("model_context_window_exceeded", "model_length"),
    "refusal": (
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
    "pause": ("pause_turn",),
    "incomplete": (
        "error",
        "incomplete",
        "cancelled",
        "timeout",
        "malformed_function_call",
        "unexpected_tool_call",
        "too_many_tool_calls",
    ),
}

CASES: list[tuple[str, StopKind]] = [(raw, kind) for kind, raws in TABLE.items() for raw in raws]


def _mixed_case(raw: str) -> str:
    return "".join(c.upper() if i % 2 == 0 else c for i, c in enumerate(raw))


def _title_case(raw: str) -> str:
    return raw[:1].upper() + raw[1:]


@pytest.mark.parametrize(("raw", "kind"), CASES)
def test_table_value_maps_to_its_kind(raw: str, kind: StopKind) -> None:
    assert classify_stop_reason(raw) == kind


@pytest.mark.parametrize(("raw", "kind"), CASES)
def test_upper_case_value_maps_to_its_kind(raw: str, kind: StopKind) -> None:
    assert classify_stop_reason(raw.upper()) == kind


@pytest.mark.parametrize(("raw", "kind"), CASES)
def test_mixed_case_value_maps_to_its_kind(raw: str, kind: StopKind) -> None:
    assert classify_stop_reason(_mixed_case(raw)) == kind
    assert classify_stop_reason(_title_case(raw)) == kind


def test_gemini_style_upper_case_values() -> None:
    # Gemini reports finish reasons in upper case.
    assert classify_stop_reason("STOP") == "finished"
    assert classify_stop_reason("MAX_TOKENS") == "output_limit"
    assert classify_stop_reason("SAFETY") == "refusal"
    assert classify_stop_reason("MALFORMED_FUNCTION_CALL") == "incomplete"
    assert classify_stop_reason("IMAGE_PROHIBITED_CONTENT") == "refusal"


def test_table_covers_every_kind_but_other() -> None:
    assert set(TABLE) | {"other"} == set(STOP_KINDS)
    assert len(STOP_KINDS) == len(set(STOP_KINDS))


def test_every_raw_value_is_listed_once() -> None:
    raws = [raw for raw, _ in CASES]
    assert len(raws) == len(set(raws))


@pytest.mark.parametrize("raw", [None, ""])
def test_missing_reason_is_other(raw: str | None) -> None:
    assert classify_stop_reason(raw) == "other"


@pytest.mark.parametrize(
    "raw",
    [
        "unknown",
        "FINISH_REASON_UNSPECIFIED",
        "OTHER",
        "language",
        "end",
        "end turn",
        "endturn",
        "tool",
        "max_token",
        "refused",
        "paused",
        "stop_sequences",
        "end_turn_",
        "tool_use!",
    ],
)
def test_unknown_reason_is_other(raw: str) -> None:
    assert classify_stop_reason(raw) == "other"


def test_every_result_is_a_known_kind() -> None:
    for raw in [None, "", "zzz", *(r for r, _ in CASES)]:
        assert classify_stop_reason(raw) in STOP_KINDS


@pytest.mark.parametrize(("raw", "kind"), CASES)
def test_model_response_derives_stop_kind(raw: str, kind: StopKind) -> None:
    assert ModelResponse(stop_reason=raw).stop_kind == kind
    assert ModelResponse(stop_reason=raw.upper()).stop_kind == kind


def test_model_response_keeps_the_raw_reason() -> None:
    r = ModelResponse(stop_reason="MAX_TOKENS")
    assert r.stop_reason == "MAX_TOKENS"
    assert r.stop_kind == "output_limit"


@pytest.mark.parametrize("raw", [None, "", "something_new"])
def test_model_response_without_known_reason_is_other(raw: str | None) -> None:
    assert ModelResponse(stop_reason=raw).stop_kind == "other"


def test_model_response_default_is_other() -> None:
    assert ModelResponse().stop_kind == "other"


def test_stop_kind_follows_a_replaced_stop_reason() -> None:
    r = ModelResponse(stop_reason="end_turn")
    assert r.stop_kind == "finished"
    r2 = replace(r, stop_reason="max_tokens")
    assert r2.stop_kind == "output_limit"
    assert replace(r2, stop_reason=None).stop_kind == "other"


def test_stop_kind_cannot_contradict_stop_reason() -> None:
    r = ModelResponse(stop_reason="end_turn", stop_kind="refusal")
    assert r.stop_kind == "finished"
