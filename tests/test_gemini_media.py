"""Images and documents to Gemini, in messages and in tool results, through the official SDK.

URL and uploaded images and documents become ``fileData`` parts, base64 ones ``inlineData``
(with their media types), text documents text parts; what Gemini cannot take raises
``UnsupportedContentError`` before any request. A tool result's image travels inside the
function response on Gemini 3 (multimodal function responses) and as a part after the group's
function responses on older models; its text stays the response's output. Bodies are compared
with the golden files in ``tests/fixtures/gemini/``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dive.agent import Agent
from dive.errors import UnsupportedContentError, UserError
from dive.llm import ModelRequest
from dive.messages import (
    Base64Source,
    ContentBlock,
    DocumentBlock,
    FileSource,
    ImageBlock,
    Message,
    TextBlock,
    TextSource,
    ToolCall,
    ToolDefinition,
    ToolResult,
    UrlSource,
    validate_complete_turns,
)
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


PNG = "iVBORw0KGgpkaXZlLXRlc3QtaW1hZ2Uh"
PDF = "JVBERi0xLjQgZGl2ZSB0ZXN0IGRvY3VtZW50"
FILE_URI = "https://generativelanguage.googleapis.com/v1beta/files/abc123"
CHART = ToolDefinition(
    name="chart",
    description="Draw the sales chart.",
    input_schema={"type": "object", "properties": {}},
)


def png() -> ImageBlock:
    return ImageBlock(source=Base64Source(media_type="image/png", data=PNG))


# --- images and documents in messages -----------------------------------------------------------


@STREAMING
async def test_url_images_and_documents_are_sent(sim: GeminiSimulator, streaming: bool) -> None:
    sim.add(sim.text("Seen."))
    user = Message(
        role="user",
        content=(
            TextBlock(text="Compare these."),
            ImageBlock(source=UrlSource(url="https://example.com/cat.png")),
            png(),
            ImageBlock(source=FileSource(file_id=FILE_URI)),
            DocumentBlock(source=Base64Source(media_type="application/pdf", data=PDF)),
            DocumentBlock(source=UrlSource(url="https://example.com/q3/report.pdf?v=2")),
            DocumentBlock(source=TextSource(data="Plain notes.")),
        ),
    )
    response = await send(gemini(sim), ModelRequest(messages=(user,)), streaming)
    assert response.text == "Seen."
    (body,) = bodies(sim)
    golden("media", "user_content", body)


REFUSED: list[tuple[ContentBlock, str]] = [
    (
        ImageBlock(source=Base64Source(media_type="image/gif", data="R0lGODlhLWRpdmU=")),
        r"image/gif images",
    ),
    (ImageBlock(source=UrlSource(url="https://example.com/render?id=7")), "media type"),
    (
        DocumentBlock(source=Base64Source(media_type="application/zip", data=PDF)),
        r"application/zip documents",
    ),
    (DocumentBlock(source=UrlSource(url="https://example.com/download")), "media type"),
]


@pytest.mark.parametrize(("block", "match"), REFUSED)
@STREAMING
async def test_content_gemini_cannot_take_is_refused_before_any_request(
    sim: GeminiSimulator, block: ContentBlock, match: str, streaming: bool
) -> None:
    user = Message(role="user", content=(TextBlock(text="Look."), block))
    with pytest.raises(UnsupportedContentError, match=match):
        await send(gemini(sim), ModelRequest(messages=(user,)), streaming)
    assert sim.requests == []
    assert issubclass(UnsupportedContentError, UserError)


async def test_unsupported_content_ends_the_run_with_a_user_error(sim: GeminiSimulator) -> None:
    gif = ImageBlock(source=Base64Source(media_type="image/gif", data="R0lGODlhLWRpdmU="))
    agent = Agent(model=gemini(sim))
    result = await agent.run(Message(role="user", content=(TextBlock(text="Look."), gif)))
    assert result.status == "incomplete"
    assert isinstance(result.error, UnsupportedContentError), result.error
    assert result.outcome is not None
    assert result.outcome.reason == "error"
    assert "image/gif" in str(result.error)
    assert sim.requests == []


# --- images in tool results ----------------------------------------------------------------------


def chart_history(result: ToolResult) -> tuple[Message, ...]:
    return (
        Message.user("Draw the sales chart."),
        Message.assistant(ToolCall(id="fc-1", name="chart")),
        Message.tool(result),
    )


RESULT = ToolResult(
    tool_call_id="fc-1",
    name="chart",
    content=(
        TextBlock(text="Here is the chart."),
        png(),
        ImageBlock(source=UrlSource(url="https://example.com/legend.png")),
    ),
)


@pytest.mark.parametrize(
    ("model", "case"),
    [
        ("gemini-2.5-flash", "gemini_2_5_parts_after"),
        ("gemini-3-flash-preview", "gemini_3_inside_function_response"),
    ],
)
@STREAMING
async def test_tool_result_image_is_sent_with_its_text(
    sim: GeminiSimulator, model: str, case: str, streaming: bool
) -> None:
    sim.add(sim.text("Sales rose."))
    request = ModelRequest(messages=chart_history(RESULT), tools=(CHART,))
    response = await send(gemini(sim, model), request, streaming)
    assert response.text == "Sales rose."
    (body,) = bodies(sim)
    golden("tool_result_media", case, body)


async def test_a_tool_returning_an_image_through_the_agent(sim: GeminiSimulator) -> None:
    def chart() -> list[ContentBlock]:
        """Draw the sales chart."""
        return [TextBlock(text="Here is the chart."), png()]

    sim.add(sim.function_call("chart", {}), sim.text("Sales rose."))
    result = await Agent(model=gemini(sim, "gemini-3-pro-preview"), tools=[chart]).run("chart?")
    assert result.status == "completed", result.error
    validate_complete_turns(result.turn.messages)
    answer = bodies(sim)[1]["contents"][-1]
    assert answer["role"] == "user"
    (part,) = answer["parts"]
    response = part["functionResponse"]
    assert response["response"] == {"output": "Here is the chart."}
    assert response["parts"] == [{"inline_data": {"data": PNG, "mime_type": "image/png"}}]
