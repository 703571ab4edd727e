"""Gemini request settings, through the official ``google-genai`` SDK against ``GeminiSimulator``.

Thinking per model family (``thinkingConfig``: ``thinkingBudget`` for Gemini 2.5,
``thinkingLevel`` for Gemini 3, ``includeThoughts`` from ``thinking_display``), settings a model
cannot honour (``UnsupportedSettingError`` before any request, or a warning and the setting
dropped with ``strict=False``), and a request carrying only instructions. Bodies are compared
with the golden files in ``tests/fixtures/gemini/`` (see ``test_gemini_golden``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from dive.agent import Agent
from dive.errors import StreamInterruptedError, UnsupportedSettingError
from dive.llm import ModelRequest, ModelSettings, SettingsChecker, ToolChoice
from dive.messages import Message, ToolDefinition
from dive.providers.google import capabilities_for
from dive.testing.gemini import GeminiSimulator
from tests.test_gemini_golden import (
    STREAMING,
    bodies,
    gemini,
    golden,
    running,
    send,
)


@pytest.fixture
async def sim() -> AsyncIterator[GeminiSimulator]:
    async with running() as s:
        yield s


HI = (Message.user("hi"),)
ECHO = ToolDefinition(
    name="echo",
    description="Echo a value.",
    input_schema={"type": "object", "properties": {"value": {"type": "string"}}},
)

# --- thinking, per model family ----------------------------------------------------------------

THINKING: list[tuple[str, str, ModelSettings]] = [
    ("flash_disabled", "gemini-2.5-flash", ModelSettings(thinking="disabled")),
    ("flash_budget_zero", "gemini-2.5-flash", ModelSettings(reasoning_budget=0)),
    ("flash_effort_low", "gemini-2.5-flash", ModelSettings(reasoning_effort="low")),
    (
        "flash_enabled_omitted",
        "gemini-2.5-flash",
        ModelSettings(thinking="enabled", thinking_display="omitted"),
    ),
    (
        "flash_budget_over_effort",
        "gemini-2.5-flash",
        ModelSettings(reasoning_budget=3000, reasoning_effort="high"),
    ),
    ("flash_lite_adaptive", "gemini-2.5-flash-lite", ModelSettings(thinking="adaptive")),
    ("flash_lite_disabled", "gemini-2.5-flash-lite", ModelSettings(thinking="disabled")),
    ("pro_effort_high", "gemini-2.5-pro", ModelSettings(reasoning_effort="high")),
    ("pro_budget_min", "gemini-2.5-pro", ModelSettings(reasoning_budget=128)),
    ("pro_display_only", "gemini-2.5-pro", ModelSettings(thinking_display="summarized")),
    ("3_pro_effort_low", "gemini-3-pro-preview", ModelSettings(reasoning_effort="low")),
    ("3_pro_effort_max", "gemini-3-pro-preview", ModelSettings(reasoning_effort="max")),
    (
        "3_pro_effort_over_budget",
        "gemini-3-pro-preview",
        ModelSettings(reasoning_effort="high", reasoning_budget=4096),
    ),
    ("3_1_pro_effort_medium", "gemini-3.1-pro-preview", ModelSettings(reasoning_effort="medium")),
    (
        "3_flash_effort_minimal",
        "gemini-3-flash-preview",
        ModelSettings(reasoning_effort="minimal", thinking_display="omitted"),
    ),
    ("3_flash_budget", "gemini-3-flash-preview", ModelSettings(reasoning_budget=2048)),
    ("3_flash_enabled", "gemini-3-flash-preview", ModelSettings(thinking="enabled")),
    ("2_0_disabled", "gemini-2.0-flash", ModelSettings(thinking="disabled")),
]


@pytest.mark.parametrize(("case", "model", "settings"), THINKING, ids=[c[0] for c in THINKING])
@STREAMING
async def test_thinking_maps_per_family(
    sim: GeminiSimulator, case: str, model: str, settings: ModelSettings, streaming: bool
) -> None:
    sim.add(sim.text("ok"))
    response = await send(
        gemini(sim, model), ModelRequest(messages=HI, settings=settings), streaming
    )
    assert response.text == "ok"
    (body,) = bodies(sim)
    golden("thinking", case, body)


REFUSED: list[tuple[str, ModelSettings, str]] = [
    ("gemini-2.5-pro", ModelSettings(thinking="disabled"), "cannot turn thinking off"),
    ("gemini-2.5-pro", ModelSettings(reasoning_budget=64), r"128.*32768"),
    ("gemini-2.5-flash", ModelSettings(reasoning_budget=30000), r"24576"),
    ("gemini-3-pro-preview", ModelSettings(thinking="disabled"), "cannot turn thinking off"),
    ("gemini-3-pro-preview", ModelSettings(reasoning_effort="minimal"), r"low, high"),
    ("gemini-3-pro-preview", ModelSettings(reasoning_effort="medium"), r"low, high"),
    ("gemini-2.0-flash", ModelSettings(thinking="enabled"), "does not think"),
    ("gemini-2.0-flash", ModelSettings(reasoning_effort="low"), "does not think"),
    ("gemini-2.5-flash", ModelSettings(parallel_tool_calls=False), "parallel"),
    (
        "gemini-2.5-flash",
        ModelSettings(tool_choice=ToolChoice(type="any", disable_parallel=True)),
        "parallel",
    ),
    (
        "gemini-2.5-flash",
        ModelSettings(context_management={"edits": [{"type": "clear_tool_uses_20250919"}]}),
        "context_management",
    ),
]


@pytest.mark.parametrize(("model", "settings", "match"), REFUSED)
@STREAMING
async def test_unsupported_settings_are_refused_before_any_request(
    sim: GeminiSimulator, model: str, settings: ModelSettings, match: str, streaming: bool
) -> None:
    made = gemini(sim, model)
    assert isinstance(made, SettingsChecker)
    with pytest.raises(UnsupportedSettingError, match=match):
        made.check_settings(settings)
    with pytest.raises(UnsupportedSettingError, match=match):
        Agent(model=made, model_settings=settings)
    request = ModelRequest(messages=HI, tools=(ECHO,), settings=settings)
    with pytest.raises(UnsupportedSettingError, match=match):
        await send(made, request, streaming)
    assert sim.requests == []


async def test_refused_setting_from_run_is_a_user_error(sim: GeminiSimulator) -> None:
    agent = Agent(model=gemini(sim, "gemini-3-pro-preview"))
    with pytest.raises(UnsupportedSettingError, match="cannot turn thinking off"):
        await agent.run("hi", model_settings=ModelSettings(thinking="disabled"))
    assert sim.requests == []


@STREAMING
async def test_not_strict_drops_the_setting_with_a_warning(
    sim: GeminiSimulator, streaming: bool, caplog: pytest.LogCaptureFixture
) -> None:
    sim.add(sim.text("ok"))
    settings = ModelSettings(
        thinking="disabled", reasoning_effort="low", parallel_tool_calls=False, strict=False
    )
    made = gemini(sim, "gemini-3-pro-preview")
    made.check_settings(settings)  # reported, not raised
    with caplog.at_level(logging.WARNING, logger="dive.providers.google"):
        await send(made, ModelRequest(messages=HI, tools=(ECHO,), settings=settings), streaming)
    (body,) = bodies(sim)
    # disabled is dropped; the effort still maps (gemini-3 thinks anyway)
    assert body["generationConfig"] == {
        "thinkingConfig": {"include_thoughts": True, "thinking_level": "LOW"}
    }
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "cannot turn thinking off" in warned
    assert "parallel" in warned


# --- a request with instructions only ------------------------------------------------------------


@STREAMING
async def test_instructions_only_sends_a_valid_request(
    sim: GeminiSimulator, streaming: bool
) -> None:
    sim.add(sim.text("Hello."))
    request = ModelRequest(system="You are terse. Greet the user.")
    response = await send(gemini(sim), request, streaming)
    assert response.text == "Hello."
    (body,) = bodies(sim)
    golden("instructions_only", "system_only", body)


@STREAMING
async def test_history_of_system_messages_only_sends_a_valid_request(
    sim: GeminiSimulator, streaming: bool
) -> None:
    sim.add(sim.text("Hello."))
    request = ModelRequest(messages=(Message.system("Always answer in French."),))
    try:
        response = await send(gemini(sim), request, streaming)
    except StreamInterruptedError as exc:  # the defect: a local failure reported as a stream one
        pytest.fail(f"a local validation failure was reported as {exc!r}")
    assert response.text == "Hello."
    (body,) = bodies(sim)
    golden("instructions_only", "system_message_only", body)


# --- the capability table -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("gemini-2.5-flash", "gemini-2.5-flash"),
        ("models/gemini-2.5-flash-lite-preview-09-2025", "gemini-2.5-flash-lite"),
        ("publishers/google/models/gemini-2.5-pro", "gemini-2.5-pro"),
        ("gemini-3-pro-preview", "gemini-3-pro"),
        ("gemini-3.1-pro-preview", "gemini-3.x-pro"),
        ("gemini-3-flash-preview", "gemini-3-flash"),
        ("gemini-3.1-flash-lite", "gemini-3-flash"),
        ("gemini-2.0-flash", "gemini-2.0"),
        ("gemma-3-27b-it", "gemma"),
    ],
)
def test_capability_rows(name: str, family: str) -> None:
    caps = capabilities_for(name)
    assert caps.known
    assert caps.family == family
    assert caps.function_response_media == family.startswith("gemini-3")


@STREAMING
async def test_unknown_model_gets_settings_as_given(
    sim: GeminiSimulator, streaming: bool, caplog: pytest.LogCaptureFixture
) -> None:
    sim.add(sim.text("ok"), sim.text("ok"))
    with caplog.at_level(logging.WARNING, logger="dive.providers.google"):
        model = gemini(sim, f"gemini-exp-{streaming}")
        for settings in (
            ModelSettings(reasoning_effort="xhigh"),
            ModelSettings(thinking="disabled"),
        ):
            await send(model, ModelRequest(messages=HI, settings=settings), streaming)
    assert not capabilities_for(f"gemini-exp-{streaming}").known
    assert [b["generationConfig"] for b in bodies(sim)] == [
        {"thinkingConfig": {"include_thoughts": True, "thinking_level": "XHIGH"}},
        {"thinkingConfig": {"thinking_budget": 0}},
    ]
    assert "does not know the Gemini model" in caplog.text
