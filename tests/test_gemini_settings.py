"""``GeminiSettings``: what only the Gemini API expresses, through the official SDK.

Safety settings, function calling restricted to a subset of the tools (``allowedFunctionNames``
with several names), the ``VALIDATED`` mode, Gemini's own tools, extra config fields and
per-request headers; how they combine with ``ModelSettings.tool_choice``; and every misuse
refused as a ``UserError`` before any request. Bodies are compared with the golden files in
``tests/fixtures/gemini/``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dive.agent import Agent
from dive.errors import UnsupportedSettingError, UserError
from dive.llm import ModelRequest, ModelSettings, ToolChoice
from dive.messages import Message, ToolDefinition
from dive.providers.google import GeminiSettings, SafetySetting
from dive.testing.gemini import GeminiSimulator
from tests.test_gemini_golden import STREAMING, bodies, gemini, golden, running, send

HI = (Message.user("Find the release notes."),)


def tool(name: str) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=f"The {name} tool.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
    )


TOOLS = (tool("search"), tool("fetch"), tool("delete"))


@pytest.fixture
async def sim() -> AsyncIterator[GeminiSimulator]:
    async with running() as s:
        yield s


@STREAMING
async def test_safety_settings_are_sent(sim: GeminiSimulator, streaming: bool) -> None:
    sim.add(sim.text("ok"))
    settings = GeminiSettings(
        safety_settings=(
            SafetySetting(category="HARM_CATEGORY_HARASSMENT", threshold="BLOCK_NONE"),
            SafetySetting(category="HARM_CATEGORY_DANGEROUS_CONTENT", threshold="BLOCK_ONLY_HIGH"),
        )
    )
    await send(gemini(sim, settings=settings), ModelRequest(messages=HI), streaming)
    (body,) = bodies(sim)
    golden("safety", "two_categories", body)


TOOL_CONFIG: list[tuple[str, GeminiSettings, ToolChoice | None]] = [
    ("validated_subset", GeminiSettings(allowed_function_names=("search", "fetch")), None),
    ("validated_mode", GeminiSettings(function_calling_mode="VALIDATED"), None),
    (
        "validated_over_auto",
        GeminiSettings(function_calling_mode="VALIDATED"),
        ToolChoice(type="auto"),
    ),
    (
        "any_subset",
        GeminiSettings(allowed_function_names=("search", "fetch")),
        ToolChoice(type="any"),
    ),
    (
        "forced_tool_wins",
        GeminiSettings(allowed_function_names=("search", "fetch")),
        ToolChoice(type="tool", name="fetch"),
    ),
    ("none_wins", GeminiSettings(function_calling_mode="VALIDATED"), ToolChoice(type="none")),
    (
        "gemini_tools",
        GeminiSettings(code_execution=True, google_search=True, url_context=True),
        None,
    ),
]


@pytest.mark.parametrize(
    ("case", "settings", "choice"), TOOL_CONFIG, ids=[c[0] for c in TOOL_CONFIG]
)
@STREAMING
async def test_function_calling_config(
    sim: GeminiSimulator,
    case: str,
    settings: GeminiSettings,
    choice: ToolChoice | None,
    streaming: bool,
) -> None:
    """The SDK sends Gemini's own tools first, then the function declarations."""
    sim.add(sim.text("ok"))
    request = ModelRequest(messages=HI, tools=TOOLS, settings=ModelSettings(tool_choice=choice))
    await send(gemini(sim, settings=settings), request, streaming)
    (body,) = bodies(sim)
    golden("tool_config", case, body)


@STREAMING
async def test_extra_config_and_request_headers(sim: GeminiSimulator, streaming: bool) -> None:
    sim.add(sim.text("ok"))
    settings = GeminiSettings(
        extra_config={"media_resolution": "MEDIA_RESOLUTION_LOW", "seed": 7, "temperature": 0.5}
    )
    request = ModelRequest(
        messages=HI,
        settings=ModelSettings(temperature=1.0, request_headers={"x-trace-id": "t-1"}),
    )
    await send(gemini(sim, settings=settings), request, streaming)
    (recorded,) = sim.generate_requests
    assert recorded.headers["x-trace-id"] == "t-1"
    # extra config comes last: its temperature replaces the mapped one
    assert recorded.body["generationConfig"] == {
        "mediaResolution": "MEDIA_RESOLUTION_LOW",
        "seed": 7,
        "temperature": 0.5,
    }


async def test_allowed_names_through_an_agent(sim: GeminiSimulator) -> None:
    seen: list[str] = []

    def search(q: str) -> str:
        """Search the web."""
        seen.append(q)
        return "notes at /releases"

    def delete(q: str) -> str:
        """Delete a page."""
        raise AssertionError("not allowed")

    sim.add(sim.function_call("search", {"q": "release notes"}), sim.text("At /releases."))
    model = gemini(sim, settings=GeminiSettings(allowed_function_names=("search",)))
    result = await Agent(model=model, tools=[search, delete]).run("notes?")
    assert result.status == "completed", result.error
    assert seen == ["release notes"]
    for body in bodies(sim):
        assert body["toolConfig"] == {
            "functionCallingConfig": {"mode": "VALIDATED", "allowedFunctionNames": ["search"]}
        }


# --- misuse ---------------------------------------------------------------------------------


def test_settings_are_checked_when_built() -> None:
    with pytest.raises(UserError, match="category 'HARM_CATEGORY_RUDE'"):
        SafetySetting(category="HARM_CATEGORY_RUDE", threshold="BLOCK_NONE")
    with pytest.raises(UserError, match="threshold 'BLOCK_SOME'"):
        SafetySetting(category="HARM_CATEGORY_HARASSMENT", threshold="BLOCK_SOME")
    twice = SafetySetting(category="HARM_CATEGORY_HARASSMENT", threshold="BLOCK_NONE")
    with pytest.raises(UserError, match="more than once"):
        GeminiSettings(safety_settings=(twice, twice))
    with pytest.raises(UserError, match="ANY or VALIDATED"):
        GeminiSettings(function_calling_mode="AUTO", allowed_function_names=("search",))
    with pytest.raises(UserError, match="non-empty"):
        GeminiSettings(allowed_function_names=())
    with pytest.raises(UserError, match="function_calling_mode 'SOMETIMES'"):
        GeminiSettings(function_calling_mode="SOMETIMES")  # pyright: ignore[reportArgumentType]


@STREAMING
async def test_allowed_name_that_is_not_a_tool_is_refused(
    sim: GeminiSimulator, streaming: bool
) -> None:
    model = gemini(sim, settings=GeminiSettings(allowed_function_names=("search", "browse")))
    with pytest.raises(UserError, match=r"browse are not tools of this request"):
        await send(model, ModelRequest(messages=HI, tools=TOOLS), streaming)
    assert sim.requests == []


@STREAMING
async def test_forced_tool_outside_the_allowed_names_is_refused(
    sim: GeminiSimulator, streaming: bool
) -> None:
    model = gemini(sim, settings=GeminiSettings(allowed_function_names=("search",)))
    settings = ModelSettings(tool_choice=ToolChoice(type="tool", name="delete"))
    with pytest.raises(UnsupportedSettingError, match=r"'delete'.*excludes"):
        await send(model, ModelRequest(messages=HI, tools=TOOLS, settings=settings), streaming)
    assert sim.requests == []


@STREAMING
async def test_extra_config_the_sdk_refuses_is_a_user_error(
    sim: GeminiSimulator, streaming: bool
) -> None:
    model = gemini(sim, settings=GeminiSettings(extra_config={"temprature": 0.2}))
    with pytest.raises(UserError, match="google-genai refused the request"):
        await send(model, ModelRequest(messages=HI), streaming)
    assert sim.requests == []
