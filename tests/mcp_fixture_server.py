"""An MCP server built with the SDK's ``MCPServer``, for the MCP tests (not a test module).

Usage: python -m tests.mcp_fixture_server stdio
       python -m tests.mcp_fixture_server streamable-http <port>
       python -m tests.mcp_fixture_server sse <port>

With ``MCP_FIXTURE_KEY`` set, its request state is sealed with that key (so a restarted
server still accepts an answer to a question it asked before the restart). Effects (the
``delete`` tool) are appended to the file named by ``MCP_FIXTURE_EFFECTS``, if set.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    Image,
    MCPServer,
    RequestStateSecurity,
    Resolve,
)
from mcp.shared.exceptions import UrlElicitationRequiredError
from mcp.types import (
    AudioContent,
    CallToolResult,
    ElicitRequestURLParams,
    EmbeddedResource,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from pydantic import BaseModel

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

key = os.environ.get("MCP_FIXTURE_KEY")
security = RequestStateSecurity(keys=[key.encode()]) if key else None
mcp = MCPServer("fixture", log_level="CRITICAL", request_state_security=security)


def _effect(line: str) -> None:
    path = os.environ.get("MCP_FIXTURE_EFFECTS")
    if path:
        with Path(path).open("a") as f:
            f.write(line + "\n")


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@mcp.tool(annotations=ToolAnnotations(destructive_hint=True, open_world_hint=False))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool(annotations=ToolAnnotations(open_world_hint=True))
def fetch(url: str) -> str:
    """Pretend to fetch a URL."""
    return f"fetched {url}"


@mcp.tool()
def fail(reason: str = "boom") -> CallToolResult:
    """Always fail (an isError result)."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"failed: {reason}")], is_error=True
    )


@mcp.tool()
def picture() -> Image:
    """A one-pixel PNG."""
    return Image(data=PNG, format="png")


@mcp.tool()
def media() -> list[object]:
    """Audio, an embedded text resource and a resource link."""
    return [
        AudioContent(
            type="audio", data=base64.b64encode(b"RIFF0000WAVE").decode(), mime_type="audio/wav"
        ),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="file:///notes.txt", text="the notes", mime_type="text/plain"
            ),
        ),
        ResourceLink(
            type="resource_link", uri="file:///big.csv", name="big.csv", mime_type="text/csv"
        ),
    ]


class Weather(BaseModel):
    city: str
    celsius: float


@mcp.tool()
def weather(city: str) -> Weather:
    """Structured output."""
    return Weather(city=city, celsius=21.5)


@mcp.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Report progress for each step."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1} of {steps}")
    return f"{steps} steps done"


@mcp.tool()
async def pid() -> int:
    """The server's process id."""
    return os.getpid()


@mcp.tool()
async def hang(seconds: float = 60.0) -> str:
    """Sleep (a call to kill the server under)."""
    _effect(f"hang started {os.getpid()}")
    await asyncio.sleep(seconds)
    return "woke"


@mcp.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool called ``name``, and say the list changed."""

    def added() -> str:
        return f"I am {name}"

    mcp.add_tool(added, name=name, description=f"The tool {name}.")
    if (ctx.protocol_version or "").startswith("2026"):
        await ctx.notify_tools_changed()
    else:
        await ctx.session.send_tool_list_changed()
    return f"added {name}"


class Confirm(BaseModel):
    ok: bool


async def _confirm(path: str) -> Elicit[Confirm]:
    return Elicit(f"Delete {path}?", Confirm)


@mcp.tool()
async def delete(
    path: str, confirm: Annotated[ElicitationResult[Confirm], Resolve(_confirm)]
) -> str:
    """Delete a path once the user confirms."""
    if isinstance(confirm, AcceptedElicitation) and confirm.data.ok:
        _effect(f"deleted {path}")
        return f"deleted {path}"
    return f"kept {path} ({confirm.action})"


@mcp.tool()
async def connect_account(ctx: Context) -> str:
    """Needs the user to sign in at a URL first (the 2025-era error form)."""
    if not os.environ.get("MCP_FIXTURE_SIGNED_IN"):
        os.environ["MCP_FIXTURE_SIGNED_IN"] = "1"
        raise UrlElicitationRequiredError(
            [
                ElicitRequestURLParams(
                    message="Sign in to connect",
                    url="https://example.test/login",
                    elicitation_id="e1",
                )
            ]
        )
    return "connected"


@mcp.resource("file:///notes.txt", mime_type="text/plain")
def notes() -> str:
    """Some notes."""
    return "the notes"


@mcp.prompt()
def review(code: str) -> str:
    """Ask for a review."""
    return f"Review this: {code}"


def main() -> None:
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        mcp.run("stdio")
    elif transport == "sse":
        mcp.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))


if __name__ == "__main__":
    main()
