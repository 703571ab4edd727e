"""OAuth for remote MCP servers through the SDK's client auth: an ``MCPServerHTTP`` given the
SDK's ``OAuthClientProvider`` completes discovery, registration, the (headless) authorization
redirect and the token exchange when the server demands it; a static bearer token goes in
``headers``; a server refusing the client is a clear error naming it."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from dive import Agent
from dive.mcp import MCPConnectionError, MCPServerHTTP
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import ToolReturn
from tests._mcp import free_port

SERVER = Path(__file__).with_name("mcp_oauth_server.py")


def _serve(kind: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), str(port), kind],
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
                raise RuntimeError("the OAuth server did not start") from None
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def oauth_url() -> Iterator[str]:
    yield from _serve("oauth")


@pytest.fixture(scope="module")
def bearer_url() -> Iterator[str]:
    yield from _serve("bearer")


class MemoryTokens:
    """The SDK's ``TokenStorage`` protocol, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Browser:
    """Follows the authorization URL as a browser would, and hands back the code."""

    def __init__(self) -> None:
        self.visits: list[str] = []
        self.result = AuthorizationCodeResult(code="", state=None)

    async def redirect(self, url: str) -> None:
        self.visits.append(url)
        async with httpx2.AsyncClient() as http:
            response = await http.get(url, follow_redirects=False)
        assert response.status_code == 302, response.text
        query = parse_qs(urlsplit(response.headers["location"]).query)
        self.result = AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0]
        )

    async def callback(self) -> AuthorizationCodeResult:
        return self.result


def oauth(url: str, storage: MemoryTokens, browser: Browser) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="dive-test",
            redirect_uris=[AnyUrl("http://127.0.0.1:9/callback")],
            grant_types=["authorization_code", "refresh_token"],
            scope="mcp",
        ),
        storage=storage,
        redirect_handler=browser.redirect,
        callback_handler=browser.callback,
    )


async def test_the_oauth_flow_runs_when_the_server_demands_it(oauth_url: str) -> None:
    storage, browser = MemoryTokens(), Browser()
    srv = MCPServerHTTP("secure", oauth_url, auth=oauth(oauth_url, storage, browser))
    model = ScriptedModel([tool_use(call("mcp__secure__whoami", {}, id="w")), text("ok")])
    async with srv:
        run = await Agent(model=model, toolsets=[srv]).run("who am I?")
    assert run.status == "completed", run.error
    [result] = [r for m in run.turn.messages if (r := m.tool_result) is not None]
    assert storage.client is not None
    assert result.text == storage.client.client_id
    assert storage.tokens is not None
    assert len(browser.visits) == 1

    # a new connection reuses the stored token: no second authorization
    again = MCPServerHTTP("secure", oauth_url, auth=oauth(oauth_url, storage, browser))
    async with again:
        out = await again.call_tool("whoami", {})
    assert isinstance(out, ToolReturn)
    assert not out.is_error
    assert len(browser.visits) == 1


async def test_a_static_bearer_token_goes_in_the_headers(bearer_url: str) -> None:
    good = MCPServerHTTP("secure", bearer_url, headers={"Authorization": "Bearer let-me-in"})
    async with good:
        out = await good.call_tool("whoami", {})
    assert isinstance(out, ToolReturn)
    assert out.structured == {"result": "static"}


async def test_a_server_refusing_the_client_is_an_error_naming_it(bearer_url: str) -> None:
    bad = MCPServerHTTP("secure", bearer_url, headers={"Authorization": "Bearer nope"}, timeout=10)
    with pytest.raises(MCPConnectionError, match='MCP server "secure"') as err:
        await bad.tools()
    assert err.value.server == "secure"
    assert "HTTP 401: the server wants authorization" in str(err.value)
