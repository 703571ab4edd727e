"""Web tool hardening: ``WebFetch`` follows redirects only on the same host (another host is
handed back to the model, so the permission gate judges it), and ``WebSearch`` backends cap
the response body and do not follow redirects.

The local server, the stub resolver and the connection guard are those of
``tests/test_toolkit_web.py``: nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx2
import pytest

from dive.agent import Agent
from dive.permissions import PermissionConfig, permission_policy
from dive.testing import ScriptedModel, call, text, tool_use
from dive.toolkit._webfetch import WebFetch, same_host
from dive.toolkit._websearch import (
    DuckDuckGoBackend,
    GoogleCSEBackend,
    SearchError,
    SearxngBackend,
)
from tests.test_tool_execution import results
from tests.test_toolkit_web import (
    Connections,
    LocalServer,
    StubResolver,
    fetch,
    guard_connections,
    public,
    serving,
)


@pytest.fixture
def server() -> Iterator[LocalServer]:
    yield from serving()


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> Connections:
    return guard_connections(monkeypatch)


def two_hosts(server: LocalServer) -> WebFetch:
    """``site.test`` and ``other.test`` both resolve to the server, and both are allowed."""
    stub = StubResolver({"site.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    return public(server, stub)


# --- WebFetch: redirects stay on the host ------------------------------------------------------


async def test_a_redirect_to_another_host_is_handed_back_not_followed(
    server: LocalServer, connections: Connections
) -> None:
    target = f"http://other.test:{server.port}/page"
    server.redirect("/go", target)
    server.html("/page", "<p>the other host</p>")
    result = await fetch(two_hosts(server), f"http://site.test:{server.port}/go")
    assert result.is_error is False
    assert result.content == (
        f"http://site.test:{server.port}/go redirected (HTTP 302) to another host: {target}\n"
        f"It was not followed. To fetch it, call WebFetch again with url={target!r}."
    )
    assert server.paths() == ["/go"]  # the other host was never asked
    assert connections.attempts == [("127.0.0.1", server.port)]


async def test_same_host_redirects_are_followed_and_another_host_ends_the_chain(
    server: LocalServer, connections: Connections
) -> None:
    server.redirect("/a", f"http://SITE.test:{server.port}/b")  # absolute, same host
    server.redirect("/b", "/c")  # relative
    server.redirect("/c", f"http://other.test:{server.port}/d")
    result = await fetch(two_hosts(server), f"http://site.test:{server.port}/a")
    assert result.is_error is False
    assert str(result.content).startswith(
        f"http://site.test:{server.port}/c redirected (HTTP 302) to another host: "
        f"http://other.test:{server.port}/d\n"
    )
    assert f"Redirected from: http://site.test:{server.port}/a" in str(result.content)
    assert server.paths() == ["/a", "/b", "/c"]


@pytest.mark.parametrize(
    ("location", "why"),
    [
        ("http://sub.site.test:{port}/x", "a subdomain"),
        ("http://site.test:{other}/x", "another port"),
        ("https://site.test:{port}/x", "https on another port than 443"),
    ],
)
async def test_another_port_or_subdomain_counts_as_another_host(
    server: LocalServer, connections: Connections, location: str, why: str
) -> None:
    target = location.format(port=server.port, other=server.port + 1)
    server.redirect("/go", target)
    stub = StubResolver({"site.test": ["127.0.0.1"], "sub.site.test": ["127.0.0.1"]})
    result = await fetch(public(server, stub), f"http://site.test:{server.port}/go")
    assert result.is_error is False, why
    assert f"to another host: {target}\n" in str(result.content), why
    assert server.paths() == ["/go"], why


async def test_an_upgrade_to_https_on_the_same_host_is_followed(
    server: LocalServer, connections: Connections
) -> None:
    server.redirect("/go", "https://site.test/secure")
    tool = WebFetch(resolver=StubResolver({"site.test": ["127.0.0.1"]}), allow=["127.0.0.1"])
    result = await fetch(tool, f"http://site.test:{server.port}/go")
    # followed: the next hop connects to port 443 (nothing listens there in the test)
    assert connections.attempts == [("127.0.0.1", server.port), ("127.0.0.1", 443)]
    assert result.is_error is True
    assert "another host" not in str(result.content)


@pytest.mark.parametrize(
    ("current", "target", "followed"),
    [
        ("http://site.test/a", "http://site.test/b", True),
        ("http://site.test/a", "http://SITE.TEST:80/b", True),
        ("https://site.test:8443/a", "https://site.test:8443/b", True),
        ("http://site.test/a", "https://site.test/b", True),  # the upgrade
        ("http://site.test/a", "https://site.test:443/b", True),
        ("http://site.test:8080/a", "https://site.test/b", True),
        ("http://site.test/a", "https://site.test:8443/b", False),
        ("https://site.test/a", "http://site.test/b", False),  # a downgrade
        ("http://site.test/a", "http://site.test:8080/b", False),
        ("http://site.test/a", "http://sub.site.test/b", False),
        ("http://sub.site.test/a", "http://site.test/b", False),
        ("http://site.test/a", "http://site.test@evil.test/b", False),
        ("http://site.test/a", "http://site.test./b", False),
    ],
)
def test_which_redirects_stay_on_the_host(current: str, target: str, followed: bool) -> None:
    assert same_host(httpx2.URL(current), httpx2.URL(target)) is followed


async def test_the_permission_gate_judges_the_other_host(
    server: LocalServer, connections: Connections
) -> None:
    # an open redirect on an allowed domain must not reach a denied one
    evil = f"http://other.test:{server.port}/secret"
    server.redirect("/go", evil)
    server.html("/secret", "<p>internal</p>")
    config = PermissionConfig.from_rules(
        allow=["WebFetch(domain:site.test)"], deny=["WebFetch(domain:other.test)"]
    )
    model = ScriptedModel(
        [
            tool_use(call("WebFetch", {"url": f"http://site.test:{server.port}/go"}, id="c1")),
            tool_use(call("WebFetch", {"url": evil}, id="c2")),
            text("done"),
        ]
    )
    agent = Agent(model=model, tools=[two_hosts(server)], approval_policy=permission_policy(config))
    async with asyncio.timeout(20):
        result = await agent.run("read the page")
    by_id = {r.tool_call_id: r for r in results(result)}
    assert by_id["c1"].is_error is False
    assert f"to another host: {evil}" in by_id["c1"].text
    assert by_id["c2"].is_error is True
    assert 'Permission denied by rule "WebFetch(domain:other.test)"' in by_id["c2"].text
    assert server.paths() == ["/go"]


# --- WebSearch: a bounded body, no redirects --------------------------------------------------


async def test_search_responses_are_capped(server: LocalServer, connections: Connections) -> None:
    huge = b"<html>" + b"x" * 3_000_000 + b"</html>"
    server.route("/html/", (200, {"Content-Type": "text/html"}, huge))
    backend = DuckDuckGoBackend(base_url=f"http://127.0.0.1:{server.port}/html/")
    with pytest.raises(SearchError, match=r"DuckDuckGo answered with more than 2,000,000 bytes"):
        await backend.search("python", max_results=5)
    small = SearxngBackend(base_url=f"http://127.0.0.1:{server.port}/", max_bytes=100)
    server.route("/search", (200, {"Content-Type": "application/json"}, b"[" + b" " * 200 + b"]"))
    with pytest.raises(SearchError, match=r"SearXNG answered with more than 100 bytes"):
        await small.search("python", max_results=5)


async def test_search_redirects_are_not_followed(
    server: LocalServer, connections: Connections
) -> None:
    server.redirect("/search", "https://elsewhere.test/search?key=secret", status=301)
    server.route("/v1", (307, {"Location": "/v2"}, b""))
    searx = SearxngBackend(base_url=f"http://127.0.0.1:{server.port}")
    with pytest.raises(SearchError) as caught:
        await searx.search("python", max_results=5)
    message = str(caught.value)
    assert "SearXNG answered HTTP 301, a redirect to https://elsewhere.test/search;" in message
    assert "secret" not in message  # the query of the location is left out
    assert "base_url" in message
    google = GoogleCSEBackend(
        api_key="k-1", engine_id="cx", base_url=f"http://127.0.0.1:{server.port}/v1"
    )
    relative = rf"a redirect to http://127\.0\.0\.1:{server.port}/v2;"
    with pytest.raises(SearchError, match=rf"Google Custom Search answered HTTP 307, {relative}"):
        await google.search("python", max_results=5)
    assert server.paths() == ["/search", "/v1"]  # neither redirect was followed
    assert connections.attempts == [("127.0.0.1", server.port)] * 2
