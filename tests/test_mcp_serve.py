"""``as_mcp_server``: dive tools and a dive agent served to the SDK's own MCP client, in
process, over stdio and over streamable HTTP; a suspension asks the client (an input-required
result on 2026-07-28, an elicitation request on a 2025-era connection)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters, types
from mcp.client.session import ClientRequestContext
from pydantic import BaseModel

from dive.mcp import as_mcp_server
from dive.tools import Suspend, ToolContext, ToolReturn, tool
from tests._mcp import free_port

ROOT = Path(__file__).resolve().parent.parent
SERVED = ROOT / "tests" / "mcp_served_agent.py"


class Forecast(BaseModel):
    city: str
    rain: bool


@tool(effect_type="read_only")
async def forecast(city: str, days: int = 1) -> Forecast:
    """The forecast for a city.

    Args:
        city: the city.
        days: how many days ahead.
    """
    return Forecast(city=city, rain=days > 1)


@tool
async def broken() -> ToolReturn:
    """Always fails."""
    return ToolReturn(content="no such thing", is_error=True)


@tool
async def confirm(ctx: ToolContext, action: str) -> Any:
    """Ask before acting; called again with the answer."""
    if ctx.resumed is None:
        return Suspend(
            f"Really {action}?",
            metadata={
                "requested_schema": {
                    "type": "object",
                    "properties": {"sure": {"type": "boolean"}},
                    "required": ["sure"],
                }
            },
            call_again=True,
        )
    return f"{action}: {ctx.resumed.answer}"


class Answers:
    """An elicitation callback answering from a table, keeping what it was asked."""

    def __init__(self, **by_message: dict[str, Any]) -> None:
        self.by_message = by_message
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        self.asked.append(params)
        for key, content in self.by_message.items():
            if key in params.message:
                return types.ElicitResult(action="accept", content=content)
        return types.ElicitResult(action="decline")


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_dive_tools_are_served_with_their_schemas_and_results() -> None:
    server = as_mcp_server([forecast, broken, confirm], name="tools")
    answers = Answers(Really={"sure": True})
    async with Client(server, elicitation_callback=answers) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == {"forecast", "broken", "confirm"}
        assert listed["forecast"].input_schema == _plain(forecast.definition.input_schema)
        assert listed["forecast"].annotations is not None
        assert listed["forecast"].annotations.read_only_hint is True
        got = await client.call_tool("forecast", {"city": "Oslo", "days": 2})
        assert got.structured_content == {"city": "Oslo", "rain": True}
        assert not got.is_error
        failed = await client.call_tool("broken", {})
        assert failed.is_error
        assert text_of(failed) == "no such thing"
        bad = await client.call_tool("forecast", {"days": 2})
        assert bad.is_error
        assert "city" in text_of(bad)
        confirmed = await client.call_tool("confirm", {"action": "delete"})
    assert text_of(confirmed) == "delete: {'sure': True}"
    [asked] = answers.asked
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert asked.requested_schema["properties"] == {"sure": {"type": "boolean"}}


def _plain(value: Any) -> Any:
    if hasattr(value, "items"):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_agent_served_over_stdio_asks_the_client_and_answers(mode: str) -> None:
    answers = Answers(Which={"answer": "blue"}, Approve={"approved": True})
    params = StdioServerParameters(command=sys.executable, args=[str(SERVED), "stdio"], cwd=ROOT)
    async with Client(params, mode=mode, elicitation_callback=answers) as client:
        [listed] = (await client.list_tools()).tools
        assert (listed.name, listed.description) == ("helper", "A helper.")
        result = await client.call_tool("helper", {"prompt": "pick a colour and save it"})
    assert not result.is_error, result
    assert text_of(result) == "blue; saved colour"
    assert next(p.message for p in answers.asked) == "Which colour?"
    assert answers.asked[1].message.startswith('Approve calling "save"')


@pytest.fixture(scope="module")
def http_agent() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVED), "streamable-http", str(port)],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("the served agent did not start") from None
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(10)


async def test_an_agent_served_over_http_suspends_into_an_input_required_result(
    http_agent: str,
) -> None:
    async with Client(http_agent) as client:
        session = client.session
        first = await session.call_tool(
            "helper", {"prompt": "pick a colour"}, allow_input_required=True
        )
        assert isinstance(first, types.InputRequiredResult)  # nothing waits on the server
        assert first.input_requests is not None
        assert first.request_state
        [(key, request)] = first.input_requests.items()
        assert key == "q"
        assert isinstance(request, types.ElicitRequest)
        assert request.params.message == "Which colour?"
        second = await session.call_tool(
            "helper",
            {"prompt": "pick a colour"},
            allow_input_required=True,
            input_responses={key: types.ElicitResult(action="accept", content={"answer": "red"})},
            request_state=first.request_state,
        )
        assert isinstance(second, types.InputRequiredResult)
        assert second.input_requests is not None
        assert second.request_state
        [(key2, approval)] = second.input_requests.items()
        assert key2 == "w"
        assert isinstance(approval.params, types.ElicitRequestFormParams)
        assert "approved" in approval.params.requested_schema["properties"]
        done = await session.call_tool(
            "helper",
            {"prompt": "pick a colour"},
            allow_input_required=True,
            input_responses={key2: types.ElicitResult(action="accept", content={"approved": True})},
            request_state=second.request_state,
        )
    assert isinstance(done, types.CallToolResult)
    assert text_of(done) == "red; saved colour"
