"""``WebFetch`` (SSRF policy, pinning, redirects, caps, conversion) and ``WebSearch`` backends.

No test sends traffic beyond 127.0.0.1: names resolve through a stub, the servers listen on
127.0.0.1, and the ``connections`` fixture records every TCP connect the HTTP stack makes and
refuses (without connecting) any address other than 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_address
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpcore2
import pytest
from httpcore2._backends.anyio import AnyIOBackend

from dive.agent import Agent
from dive.errors import MissingExtraError, UserError
from dive.testing import ScriptedModel, call, text, tool_use
from dive.toolkit._bash import Bash
from dive.toolkit._ssrf import AddressPolicy, AddressRefusedError, classify_address
from dive.toolkit._webfetch import WebFetch, WebFetchInput
from dive.toolkit._websearch import (
    DuckDuckGoBackend,
    GoogleCSEBackend,
    SearchError,
    SearchResult,
    SearxngBackend,
    WebSearch,
    WebSearchInput,
    parse_duckduckgo,
)
from dive.tools import ToolContext, ToolReturn
from tests.test_tool_execution import results

# --- a local server, a stub resolver, a connection recorder ---------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    host: str | None
    body: bytes


Reply = tuple[int, dict[str, str], bytes]
Route = Callable[[Seen], Reply]


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, ConnectionError):  # a client that gave up early is expected
            super().handle_error(request, client_address)


class LocalServer:
    """An HTTP/1.1 server on 127.0.0.1 answering from a route table, recording requests."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.seen: list[Seen] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_one(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                parts = urlsplit(self.path)
                seen = Seen(
                    method=self.command,
                    path=parts.path,
                    query=parse_qs(parts.query),
                    host=self.headers.get("Host"),
                    body=self.rfile.read(length) if length else b"",
                )
                outer.seen.append(seen)
                route = outer.routes.get(parts.path)
                status, headers, payload = (
                    route(seen) if route else (404, {"Content-Type": "text/plain"}, b"no route")
                )
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (size cap, timeout)

            do_GET = do_POST = handle_one

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def route(self, path: str, reply: Reply | Route) -> None:
        self.routes[path] = reply if callable(reply) else (lambda _seen: reply)

    def html(self, path: str, body: str) -> None:
        self.route(path, (200, {"Content-Type": "text/html; charset=utf-8"}, body.encode()))

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        self.route(path, (status, {"Location": location}, b""))

    def paths(self) -> list[str]:
        return [s.path for s in self.seen]


def serving() -> Iterator[LocalServer]:
    """A started :class:`LocalServer`, shut down when the generator is closed."""
    srv = LocalServer()
    srv.thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()
    srv.thread.join(timeout=5)


@pytest.fixture
def server() -> Iterator[LocalServer]:
    yield from serving()


class StubResolver:
    """Names → addresses without DNS: the first lookup of a name answers ``answers[name]``,
    later ones ``later[name]`` when given (a rebinding DNS server)."""

    def __init__(
        self, answers: Mapping[str, Sequence[str]], later: Mapping[str, Sequence[str]] = {}
    ) -> None:
        self.answers = answers
        self.later = later
        self.lookups: list[str] = []

    async def resolve(self, host: str, port: int) -> Sequence[str]:
        first = host not in self.lookups
        self.lookups.append(host)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        if not first and host in self.later:
            return self.later[host]
        return self.answers[host]


class TLSProbe(httpcore2.AsyncNetworkStream):
    """A stream that records the TLS server name it is asked for and stops there."""

    def __init__(self, log: list[str | None]) -> None:
        self.log = log

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:  # noqa: ASYNC109
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:  # noqa: ASYNC109
        return None

    async def aclose(self) -> None:
        return None

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> httpcore2.AsyncNetworkStream:
        self.log.append(server_hostname)
        raise httpcore2.ConnectError("the test stops at the TLS handshake")


@dataclass
class Connections:
    attempts: list[tuple[str, int]] = field(default_factory=list[tuple[str, int]])
    tls_names: list[str | None] = field(default_factory=list[str | None])
    probe_tls: bool = False


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> Connections:
    """Every TCP connect of the HTTP stack, recorded; only 127.0.0.1 is really connected."""
    return guard_connections(monkeypatch)


def guard_connections(monkeypatch: pytest.MonkeyPatch) -> Connections:
    """Record every TCP connect of the HTTP stack; refuse any address but 127.0.0.1."""
    record = Connections()
    original = AnyIOBackend.connect_tcp

    async def connect_tcp(
        self: AnyIOBackend,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        record.attempts.append((host, port))
        if host != "127.0.0.1":
            raise httpcore2.ConnectError(f"test guard: no traffic to {host}")
        if record.probe_tls:
            return TLSProbe(record.tls_names)
        return await original(
            self, host, port, timeout=timeout, local_address=local_address,
            socket_options=socket_options,
        )  # fmt: skip

    monkeypatch.setattr(AnyIOBackend, "connect_tcp", connect_tcp)
    return record


def ctx() -> ToolContext:
    return ToolContext(tool_call_id="call_1", tool_name="WebFetch", turn_id="turn_1")


async def fetch(tool: WebFetch, url: str, offset: int = 0) -> ToolReturn:
    value, error = tool.validate({"url": url, "offset": offset})
    assert error is None, error
    assert isinstance(value, WebFetchInput)
    async with asyncio.timeout(20):
        return await tool.call(value, ctx())


def public(server: LocalServer, resolver: StubResolver | None = None, **options: Any) -> WebFetch:
    """A WebFetch for which exactly 127.0.0.1:<server port> counts as a public server."""
    stub = resolver or StubResolver({"site.test": ["127.0.0.1"]})
    return WebFetch(resolver=stub, allow=[f"127.0.0.1:{server.port}"], **options)


REFUSED = [
    "127.0.0.1",
    "::1",
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "100.64.0.1",
    "169.254.169.254",
]


def literal(address: str) -> str:
    return f"[{address}]" if ":" in address else address


# --- the address policy ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "a loopback address"),
        ("127.255.0.9", "a loopback address"),
        ("::1", "a loopback address"),
        ("10.0.0.1", "a private address"),
        ("172.16.0.1", "a private address"),
        ("172.31.255.1", "a private address"),
        ("192.168.1.1", "a private address"),
        ("100.64.0.1", "a carrier-grade NAT (shared) address"),
        ("169.254.169.254", "a cloud metadata endpoint"),
        ("169.254.1.1", "a link-local address"),
        ("fd00:ec2::254", "a cloud metadata endpoint"),
        ("fd12:3456::1", "a private (unique-local) address"),
        ("fe80::1", "a link-local address"),
        ("0.0.0.0", "an unspecified ('this network') address"),
        ("::", "an unspecified address"),
        ("224.0.0.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("255.255.255.255", "a reserved address"),
        ("198.18.0.1", "a reserved (benchmarking) address"),
        ("::ffff:127.0.0.1", "a loopback address (IPv4 127.0.0.1 inside IPv6)"),
        ("::ffff:10.0.0.1", "a private address (IPv4 10.0.0.1 inside IPv6)"),
        ("::ffff:169.254.169.254", "a cloud metadata endpoint (IPv4 169.254.169.254 inside IPv6)"),
        ("64:ff9b::a00:1", "a private address (IPv4 10.0.0.1 inside IPv6)"),
        ("2002:c0a8:0101::1", "a private address (IPv4 192.168.1.1 inside IPv6)"),
        ("3fff::1", None),
        ("8.8.8.8", None),
        ("93.184.215.14", None),
        ("2606:4700:4700::1111", None),
        ("::ffff:8.8.8.8", None),
    ],
)
def test_address_classification(address: str, reason: str | None) -> None:
    assert classify_address(ip_address(address)) == reason


def test_allow_list_entries() -> None:
    policy = AddressPolicy(["10.0.0.0/8", "127.0.0.1:8080", "[::1]:9000", "169.254.0.0/16"])
    assert policy.refusal(ip_address("10.9.8.7"), 443) is None
    assert policy.refusal(ip_address("127.0.0.1"), 8080) is None
    assert policy.refusal(ip_address("127.0.0.1"), 8081) == "a loopback address"
    assert policy.refusal(ip_address("::1"), 9000) is None
    assert policy.refusal(ip_address("::1"), 80) == "a loopback address"
    assert policy.refusal(ip_address("169.254.1.1"), 80) is None
    # a network never unlocks a metadata endpoint; only the exact address does
    assert policy.refusal(ip_address("169.254.169.254"), 80) == "a cloud metadata endpoint"
    assert AddressPolicy(["169.254.169.254"]).refusal(ip_address("169.254.169.254"), 80) is None
    assert policy.refusal(ip_address("192.168.0.1"), 80) == "a private address"


@pytest.mark.parametrize("entry", ["", "10.0.0.0/33", "host:99999", "[::1", "a/b", "*", "x y"])
def test_bad_allow_list_entries_are_refused(entry: str) -> None:
    with pytest.raises(UserError, match="allow-list entry"):
        AddressPolicy([entry])


async def test_every_resolved_address_is_checked() -> None:
    stub = StubResolver({"mixed.test": ["93.184.215.14", "10.0.0.1"]})
    with pytest.raises(AddressRefusedError) as info:
        await AddressPolicy().checked_addresses("mixed.test", 80, stub)
    assert info.value.address == ip_address("10.0.0.1")
    assert "mixed.test (10.0.0.1)" in str(info.value)
    ok = StubResolver({"ok.test": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]})
    assert len(await AddressPolicy().checked_addresses("ok.test", 80, ok)) == 2


async def test_trusted_names_and_metadata_names() -> None:
    stub = StubResolver(
        {"intranet.test": ["10.1.1.1"], "meta.corp.test": ["169.254.169.254"]},
    )
    policy = AddressPolicy(["intranet.test", "*.corp.test"])
    assert await policy.checked_addresses("intranet.test", 80, stub) == (ip_address("10.1.1.1"),)
    with pytest.raises(AddressRefusedError, match="cloud metadata endpoint"):
        await policy.checked_addresses("meta.corp.test", 80, stub)
    with pytest.raises(AddressRefusedError, match="metadata service name"):
        await AddressPolicy().checked_addresses("metadata.google.internal", 80, stub)
    assert "metadata.google.internal" not in stub.lookups  # refused before any lookup


# --- SSRF through WebFetch: no connection is ever attempted ----------------------------------


@pytest.mark.parametrize("address", REFUSED)
async def test_refused_as_url_literal(address: str, connections: Connections) -> None:
    stub = StubResolver({})
    result = await fetch(WebFetch(resolver=stub), f"http://{literal(address)}:8080/secret")
    assert result.is_error is True
    assert "refused to connect" in str(result.content)
    assert connections.attempts == []
    assert stub.lookups == []


@pytest.mark.parametrize("address", REFUSED)
async def test_refused_through_a_dns_name(address: str, connections: Connections) -> None:
    stub = StubResolver({"innocent.test": [address]})
    result = await fetch(WebFetch(resolver=stub), "http://innocent.test/")
    assert result.is_error is True
    assert f"innocent.test ({address})" in str(result.content)
    assert connections.attempts == []


@pytest.mark.parametrize("address", REFUSED)
@pytest.mark.parametrize("via", ["name", "literal"])
async def test_refused_through_a_redirect(
    address: str, via: str, server: LocalServer, connections: Connections
) -> None:
    target = "http://internal.test/admin" if via == "name" else f"http://{literal(address)}/admin"
    server.redirect("/go", target)
    stub = StubResolver({"site.test": ["127.0.0.1"], "internal.test": [address]})
    tool = public(server, stub)
    result = await fetch(tool, f"http://site.test:{server.port}/go")
    # another host: handed back to the model, not followed
    assert result.is_error is False
    assert f"to another host: {target}\n" in str(result.content)
    assert connections.attempts == [("127.0.0.1", server.port)]
    # and fetching it is refused before any connection
    again = await fetch(tool, target)
    assert again.is_error is True
    assert "refused to connect" in str(again.content)
    assert connections.attempts == [("127.0.0.1", server.port)]
    assert server.paths() == ["/go"]


@pytest.mark.parametrize("address", [a for a in REFUSED if a != "127.0.0.1"])
async def test_a_same_host_redirect_is_checked_again(
    address: str, server: LocalServer, connections: Connections
) -> None:
    # the name answers differently on the second lookup (rebinding between hops)
    server.redirect("/go", "/admin")
    stub = StubResolver({"site.test": ["127.0.0.1"]}, later={"site.test": [address]})
    result = await fetch(public(server, stub), f"http://site.test:{server.port}/go")
    assert result.is_error is True
    assert "refused to connect" in str(result.content)
    assert connections.attempts == [("127.0.0.1", server.port)]
    assert server.paths() == ["/go"]


async def test_ipv4_mapped_literals_are_refused(connections: Connections) -> None:
    tool = WebFetch(resolver=StubResolver({}))
    for url in (
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://[::ffff:10.0.0.1]/",
    ):
        result = await fetch(tool, url)
        assert "refused to connect" in str(result.content), url
    assert connections.attempts == []


async def test_allowing_one_port_does_not_allow_others(
    server: LocalServer, connections: Connections
) -> None:
    result = await fetch(public(server), f"http://127.0.0.1:{server.port + 1}/")
    assert "refused to connect" in str(result.content)
    assert connections.attempts == []


async def test_connection_is_pinned_to_the_checked_address(
    server: LocalServer, connections: Connections
) -> None:
    """DNS rebinding: the name answers an allowed address, then a private one."""
    server.html("/page", "<p>pinned</p>")
    server.redirect("/hop", "/page")
    stub = StubResolver({"rebind.test": ["127.0.0.1"]}, later={"rebind.test": ["10.0.0.1"]})
    tool = public(server, stub)
    result = await fetch(tool, f"http://rebind.test:{server.port}/page")
    assert result.is_error is False
    assert "pinned" in str(result.content)
    # one lookup, checked; the connection went to that address, with the name as Host
    assert stub.lookups == ["rebind.test"]
    assert connections.attempts == [("127.0.0.1", server.port)]
    assert server.seen[-1].host == f"rebind.test:{server.port}"
    # a redirect is a new hop: resolved and checked again, and now refused
    stub = StubResolver({"rebind.test": ["127.0.0.1"]}, later={"rebind.test": ["10.0.0.1"]})
    result = await fetch(public(server, stub), f"http://rebind.test:{server.port}/hop")
    assert stub.lookups == ["rebind.test", "rebind.test"]
    assert "rebind.test (10.0.0.1): it is a private address" in str(result.content)
    assert connections.attempts == [("127.0.0.1", server.port)] * 2
    assert server.paths() == ["/page", "/hop"]


async def test_tls_uses_the_name_while_connecting_to_the_address(
    connections: Connections,
) -> None:
    connections.probe_tls = True
    stub = StubResolver({"secure.test": ["127.0.0.1"]})
    tool = WebFetch(resolver=stub, allow=["127.0.0.1:8443"])
    result = await fetch(tool, "https://secure.test:8443/")
    assert result.is_error is True
    assert connections.attempts == [("127.0.0.1", 8443)]
    assert connections.tls_names == ["secure.test"]  # SNI and certificate check use the name


async def test_next_checked_address_is_tried_when_one_fails(
    server: LocalServer, connections: Connections
) -> None:
    server.html("/", "<p>second address</p>")
    stub = StubResolver({"two.test": ["93.184.215.14", "127.0.0.1"]})
    tool = WebFetch(resolver=stub, allow=[f"127.0.0.1:{server.port}"])
    result = await fetch(tool, f"http://two.test:{server.port}/")
    assert "second address" in str(result.content)
    assert connections.attempts == [("93.184.215.14", server.port), ("127.0.0.1", server.port)]


# --- WebFetch behaviour ----------------------------------------------------------------------

PAGE = """<!doctype html><html><head><title>The  Guide &amp; more</title>
<style>body { color: red }</style><script>alert("x")</script></head>
<body><h1>Install</h1><p>Run <code>pip install dive</code>, then read
<a href="/docs">the docs</a>.</p><ul><li>fast</li><li>small</li></ul>
<noscript>enable js</noscript></body></html>"""


async def test_html_becomes_markdown(server: LocalServer, connections: Connections) -> None:
    server.html("/guide", PAGE)
    result = await fetch(public(server), f"http://site.test:{server.port}/guide")
    assert result.is_error is False
    assert result.content == (
        f"URL: http://site.test:{server.port}/guide\n"
        "Content-Type: text/html\n"
        "Title: The Guide & more\n\n"
        "# Install\n\nRun `pip install dive`, then read\n[the docs](/docs).\n\n- fast\n- small"
    )


async def test_text_and_json_come_back_as_they_are(
    server: LocalServer, connections: Connections
) -> None:
    server.route("/a.txt", (200, {"Content-Type": "text/plain"}, b"line 1\n  <b>not html</b>\n"))
    server.route("/a.json", (200, {"Content-Type": "application/json"}, b'{"k": [1, 2]}'))
    tool = public(server)
    result = await fetch(tool, f"http://site.test:{server.port}/a.txt")
    assert str(result.content).endswith("Content-Type: text/plain\n\nline 1\n  <b>not html</b>\n")
    result = await fetch(tool, f"http://site.test:{server.port}/a.json")
    assert str(result.content).endswith('\n\n{"k": [1, 2]}')


async def test_binary_is_refused(server: LocalServer, connections: Connections) -> None:
    server.route(
        "/logo.png", (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n" + bytes(64))
    )
    server.route("/blob", (200, {}, b"\x00\x01\x02binary" * 10))
    server.route("/untyped", (200, {}, b"<html><body><p>sniffed</p></body></html>"))
    tool = public(server)
    result = await fetch(tool, f"http://site.test:{server.port}/logo.png")
    assert result.is_error is True
    assert "image/png content, which WebFetch does not return" in str(result.content)
    result = await fetch(tool, f"http://site.test:{server.port}/blob")
    assert "binary content" in str(result.content)
    result = await fetch(tool, f"http://site.test:{server.port}/untyped")
    assert str(result.content).endswith("\n\nsniffed")


async def test_size_cap(server: LocalServer, connections: Connections) -> None:
    server.route("/big", (200, {"Content-Type": "text/plain"}, b"x" * 300_000))
    tool = public(server, max_bytes=100_000, max_chars=200_000)
    result = await fetch(tool, f"http://site.test:{server.port}/big")
    content = str(result.content)
    assert result.is_error is False
    assert content.split("\n\n")[1] == "x" * 100_000
    assert "only the first 100,000 bytes were read" in content


async def test_size_cap_counts_decoded_bytes(server: LocalServer, connections: Connections) -> None:
    bomb = gzip.compress(b"y" * 2_000_000)
    headers = {"Content-Type": "text/plain", "Content-Encoding": "gzip"}
    server.route("/bomb", (200, headers, bomb))
    result = await fetch(public(server, max_bytes=50_000), f"http://site.test:{server.port}/bomb")
    assert str(result.content).split("\n\n")[1] == "y" * 50_000
    assert "larger than 50,000 bytes" in str(result.content)


async def test_long_text_is_paged_with_offset(
    server: LocalServer, connections: Connections
) -> None:
    server.route("/long", (200, {"Content-Type": "text/plain"}, b"a" * 150 + b"b" * 100))
    tool = public(server, max_chars=100)
    url = f"http://site.test:{server.port}/long"
    first = str((await fetch(tool, url)).content)
    assert "a" * 100 + "\n\n[Showing characters 0-100 of 250." in first
    assert "Call WebFetch again with offset=100" in first
    second = str((await fetch(tool, url, offset=200)).content)
    assert "b" * 50 + "\n\n[Showing characters 200-250 of 250.]" in second
    past = await fetch(tool, url, offset=900)
    assert past.is_error is True
    assert "past the end" in str(past.content)


async def test_redirects_are_followed_up_to_the_limit(
    server: LocalServer, connections: Connections
) -> None:
    for n in range(6):
        server.redirect(f"/r{n}", f"/r{n + 1}", status=301 if n % 2 else 307)
    server.html("/r6", "<p>arrived</p>")
    tool = public(server, max_redirects=3)
    result = await fetch(tool, f"http://site.test:{server.port}/r3")
    assert result.content == (
        f"URL: http://site.test:{server.port}/r6\n"
        f"Redirected from: http://site.test:{server.port}/r3\n"
        "Content-Type: text/html\n\narrived"
    )
    server.seen.clear()
    result = await fetch(tool, f"http://site.test:{server.port}/r0")
    assert result.is_error is True
    assert "redirected more than 3 times" in str(result.content)
    assert server.paths() == ["/r0", "/r1", "/r2", "/r3"]


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://site.test/x", "gopher://site.test/", "data:text/plain,hi"]
)
async def test_non_http_schemes_are_refused(url: str, connections: Connections) -> None:
    result = await fetch(WebFetch(resolver=StubResolver({"site.test": ["93.184.215.14"]})), url)
    assert result.is_error is True
    assert "only http and https URLs can be fetched" in str(result.content)
    assert connections.attempts == []


async def test_redirect_to_another_scheme_is_refused(
    server: LocalServer, connections: Connections
) -> None:
    server.redirect("/", "file:///etc/passwd")
    result = await fetch(public(server), f"http://site.test:{server.port}/")
    assert "the scheme 'file' is not supported" in str(result.content)


async def test_http_errors_and_unknown_hosts(server: LocalServer, connections: Connections) -> None:
    server.route("/gone", (404, {"Content-Type": "text/html"}, b"<h1>Nothing here</h1>"))
    tool = public(server)
    result = await fetch(tool, f"http://site.test:{server.port}/gone")
    assert result.is_error is True
    assert str(result.content).startswith(
        f"HTTP 404 Not Found from http://site.test:{server.port}/gone"
    )
    assert "# Nothing here" in str(result.content)
    result = await fetch(tool, "http://nowhere.test/")
    assert "the host nowhere.test could not be resolved" in str(result.content)
    result = await fetch(tool, "not a url")
    assert result.is_error is True


async def test_the_whole_fetch_is_time_limited(
    server: LocalServer, connections: Connections
) -> None:
    def slow(seen: Seen) -> Reply:
        time.sleep(1.5)
        return 200, {"Content-Type": "text/plain"}, b"late"

    server.route("/slow", slow)
    start = time.monotonic()
    result = await fetch(public(server, timeout=0.3), f"http://site.test:{server.port}/slow")
    assert time.monotonic() - start < 1.4
    assert "took longer than 0.3 s" in str(result.content)


def test_webfetch_definition_carries_the_contract() -> None:
    tool = WebFetch(resolver=StubResolver({}))
    d = tool.definition
    assert d.name == "WebFetch"
    assert dict(d.metadata) == {"dive.permission.argument": "url", "dive.permission.kind": "url"}
    assert (tool.annotations.read_only, tool.annotations.open_world) == (True, True)
    assert d.effect_type == "external_side_effect"
    assert d.idempotent is True
    assert d.input_schema["required"] == ["url"]
    with pytest.raises(UserError, match="allow-list entry"):
        WebFetch(allow=["not a host"])


def test_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "markdownify", None)
    with pytest.raises(MissingExtraError, match=r"markdownify.*dive-agents\[toolkit\]"):
        WebFetch()


# --- WebSearch ---------------------------------------------------------------------------------

DDG_PAGE = """<!DOCTYPE html><html><body><div id="links" class="results">
<div class="result results_links results_links_deep result--ad ">
 <div class="links_main links_deep result__body"><h2 class="result__title">
 <a rel="nofollow" class="result__a"
 href="https://duckduckgo.com/y.js?ad_domain=ads.example&amp;u3=x">Buy <b>Python</b> now</a></h2>
 <a class="result__snippet" href="https://duckduckgo.com/y.js?x=1">Sponsored</a></div></div>
<div class="result results_links results_links_deep web-result ">
 <div class="links_main links_deep result__body"><h2 class="result__title">
 <a rel="nofollow" class="result__a"
 href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.python.org%2F&amp;rut=abc"
 >Welcome to <b>Python</b>.org</a></h2>
 <div class="result__extras"><div class="result__extras__url"><a class="result__url"
 href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.python.org%2F">www.python.org</a></div></div>
 <a class="result__snippet"
 href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.python.org%2F"
 >The official home of the <b>Python</b> Programming
 Language &amp; friends.</a>
 <div class="clear"></div></div></div>
<div class="result results_links results_links_deep web-result ">
 <div class="links_main links_deep result__body"><h2 class="result__title">
 <a rel="nofollow" class="result__a"
 href="https://docs.python.org/3/tutorial/">The Python Tutorial</a></h2>
 <a class="result__snippet"
 href="https://docs.python.org/3/tutorial/">Python is an easy to learn,
 powerful programming language.</a></div></div>
<div class="result results_links results_links_deep web-result ">
 <div class="links_main links_deep result__body"><h2 class="result__title">
 <a rel="nofollow" class="result__a"
 href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fen.wikipedia.org%2Fwiki%2FPython_(programming_language)"
 >Python (programming language) - Wikipedia</a></h2>
 </div></div>
</div><div class="nav-link"><form action="/html/" method="post"><input type="hidden" name="s"
 value="30"></form></div>
</body></html>"""

DDG_CHALLENGE = """<html><body><form id="challenge-form"
 action="//duckduckgo.com/anomaly.js?sv=html&amp;cc=botnet" method="POST">
<div
 class="anomaly-modal__title">Unfortunately, bots use DuckDuckGo too.</div></form></body></html>"""


def test_duckduckgo_page_parsing() -> None:
    assert parse_duckduckgo(DDG_PAGE) == [
        SearchResult(
            title="Welcome to Python.org",
            url="https://www.python.org/",
            snippet="The official home of the Python Programming Language & friends.",
        ),
        SearchResult(
            title="The Python Tutorial",
            url="https://docs.python.org/3/tutorial/",
            snippet="Python is an easy to learn, powerful programming language.",
        ),
        SearchResult(
            title="Python (programming language) - Wikipedia",
            url="https://en.wikipedia.org/wiki/Python_(programming_language)",
        ),
    ]
    with pytest.raises(SearchError, match="challenge for automated traffic"):
        parse_duckduckgo(DDG_CHALLENGE)
    assert parse_duckduckgo("<html><div class='no-results'>No results.</div></html>") == []


async def test_duckduckgo_backend_against_a_local_server(
    server: LocalServer, connections: Connections
) -> None:
    server.html("/html/", DDG_PAGE)
    backend = DuckDuckGoBackend(base_url=f"http://127.0.0.1:{server.port}/html/", region="uk-en")
    found = await backend.search("python tutorial", max_results=2)
    assert [r.url for r in found] == [
        "https://www.python.org/",
        "https://docs.python.org/3/tutorial/",
    ]
    (request,) = server.seen
    assert request.method == "POST"
    form = parse_qs(request.body.decode())
    assert form["q"] == ["python tutorial"]
    assert form["kl"] == ["uk-en"]
    server.route("/html/", (202, {"Content-Type": "text/html"}, DDG_CHALLENGE.encode()))
    with pytest.raises(SearchError, match="challenge"):
        await backend.search("python", max_results=5)
    server.route("/html/", (429, {}, b""))
    with pytest.raises(SearchError, match="HTTP 429"):
        await backend.search("python", max_results=5)


SEARXNG_JSON = {
    "query": "rust async",
    "number_of_results": 0,
    "results": [
        {"url": "https://tokio.rs/", "title": "Tokio - An asynchronous Rust runtime",
         "content": "Tokio is an asynchronous runtime for the Rust programming language.",
         "engine": "duckduckgo", "engines": ["duckduckgo", "brave"], "score": 2.5},
        {"url": "https://rust-lang.github.io/async-book/",
         "title": "Asynchronous Programming in Rust", "content": "", "engine": "google"},
        {"url": "javascript:alert(1)", "title": "junk"},
    ],
    "answers": [], "suggestions": ["rust async await"], "unresponsive_engines": [],
}  # fmt: skip


async def test_searxng_backend_against_a_local_server(
    server: LocalServer, connections: Connections
) -> None:
    payload = json.dumps(SEARXNG_JSON).encode()
    server.route("/search", (200, {"Content-Type": "application/json"}, payload))
    backend = SearxngBackend(base_url=f"http://127.0.0.1:{server.port}/", language="en")
    found = await backend.search("rust async", max_results=5)
    assert found == [
        SearchResult(
            title="Tokio - An asynchronous Rust runtime",
            url="https://tokio.rs/",
            snippet="Tokio is an asynchronous runtime for the Rust programming language.",
        ),
        SearchResult(
            title="Asynchronous Programming in Rust",
            url="https://rust-lang.github.io/async-book/",
        ),
    ]
    (request,) = server.seen
    assert request.query == {"q": ["rust async"], "format": ["json"], "language": ["en"]}
    server.route("/search", (403, {"Content-Type": "text/html"}, b"Forbidden"))
    with pytest.raises(SearchError, match=r"search\.formats"):
        await backend.search("rust", max_results=5)
    server.route("/search", (200, {"Content-Type": "text/html"}, b"<html>not json</html>"))
    with pytest.raises(SearchError, match="JSON object"):
        await backend.search("rust", max_results=5)


async def test_google_cse_backend_against_a_local_server(
    server: LocalServer, connections: Connections
) -> None:
    items = {
        "items": [{"title": "Example", "link": "https://example.com/", "snippet": "An example."}]
    }
    server.route("/v1", (200, {"Content-Type": "application/json"}, json.dumps(items).encode()))
    base_url = f"http://127.0.0.1:{server.port}/v1"
    backend = GoogleCSEBackend(api_key="k-123", engine_id="cx-9", base_url=base_url)
    found = await backend.search("example", max_results=40)
    assert found == [
        SearchResult(title="Example", url="https://example.com/", snippet="An example.")
    ]
    assert server.seen[0].query == {
        "key": ["k-123"],
        "cx": ["cx-9"],
        "q": ["example"],
        "num": ["10"],
    }
    assert "k-123" not in repr(backend)
    error = {"error": {"code": 403, "message": "API key not valid."}}
    server.route("/v1", (403, {"Content-Type": "application/json"}, json.dumps(error).encode()))
    with pytest.raises(SearchError, match=re.escape("HTTP 403: API key not valid.; check api_key")):
        await backend.search("example", max_results=3)


@dataclass
class FixedBackend:
    found: list[SearchResult]
    asked: list[tuple[str, int]] = field(default_factory=list[tuple[str, int]])
    fail: bool = False

    async def search(self, query: str, *, max_results: int) -> list[SearchResult]:
        self.asked.append((query, max_results))
        if self.fail:
            raise SearchError("the backend is down; try again later")
        return self.found[:max_results]


HITS = [
    SearchResult(title="A", url="https://docs.example.com/a", snippet="first"),
    SearchResult(title="B", url="https://blog.other.org/b"),
    SearchResult(title="C", url="https://example.com/c", snippet="third"),
]


async def search(tool: WebSearch, **arguments: Any) -> ToolReturn:
    value, error = tool.validate(arguments)
    assert error is None, error
    assert isinstance(value, WebSearchInput)
    return await tool.call(value, ctx())


async def test_websearch_formats_and_filters() -> None:
    backend = FixedBackend(HITS)
    tool = WebSearch(backend, max_results=2)
    result = await search(tool, query="example docs")
    assert result.content == (
        "Search results for 'example docs':\n\n"
        "1. A\n   https://docs.example.com/a\n   first\n"
        "2. B\n   https://blog.other.org/b"
    )
    assert backend.asked == [("example docs", 2)]
    result = await search(tool, query="example", allowed_domains=["example.com"], max_results=5)
    assert "other.org" not in str(result.content)
    assert "https://docs.example.com/a" in str(result.content)
    assert "https://example.com/c" in str(result.content)
    assert backend.asked[-1] == ("example", 15)  # asks for more when filtering
    result = await search(tool, query="example", blocked_domains=["docs.example.com", "other.org"])
    assert "1. C\n" in str(result.content)
    assert "2." not in str(result.content)
    result = await search(tool, query="example", allowed_domains=["nowhere.test"])
    assert result.content == "No results found for 'example'."


async def test_websearch_backend_failure_is_an_error_result() -> None:
    result = await search(WebSearch(FixedBackend([], fail=True)), query="anything")
    assert result.is_error is True
    assert result.content == "Search failed: the backend is down; try again later"


def test_websearch_definition_carries_the_contract() -> None:
    tool = WebSearch(FixedBackend([]))
    d = tool.definition
    assert d.name == "WebSearch"
    assert dict(d.metadata) == {"dive.permission.argument": "query", "dive.permission.kind": "text"}
    assert d.effect_type == "read_only"
    assert d.idempotent is True
    assert tool.validate({"query": "x"})[1] is not None  # too short
    assert tool.validate({"query": "ok", "max_results": 50})[1] is not None
    assert isinstance(WebSearch().backend, DuckDuckGoBackend)
    with pytest.raises(UserError, match="between 1 and 20"):
        WebSearch(FixedBackend([]), max_results=0)


# --- through an agent ----------------------------------------------------------------------------


async def test_bash_and_webfetch_through_an_agent(
    tmp_path: Path, server: LocalServer, connections: Connections
) -> None:
    server.html("/notes", "<h2>Release notes</h2><p>Version <em>2.0</em> is out.</p>")
    fetcher = public(server, StubResolver({"docs.test": ["127.0.0.1"]}))
    model = ScriptedModel(
        [
            tool_use(
                call("Bash", {"command": "echo from-bash > out.txt && cat out.txt"}, id="c1"),
                call("WebFetch", {"url": f"http://docs.test:{server.port}/notes"}, id="c2"),
                call("WebFetch", {"url": "http://169.254.169.254/latest/meta-data/"}, id="c3"),
                call("Bash", {"command": "exit 4"}, id="c4"),
            ),
            text("done"),
        ]
    )
    agent = Agent(model=model, tools=[Bash(tmp_path, requires_approval=False), fetcher])
    async with asyncio.timeout(20):
        result = await agent.run("check the release notes")
    assert result.output == "done"
    by_id = {r.tool_call_id: r for r in results(result)}
    assert by_id["c1"].is_error is False
    assert by_id["c1"].text == "from-bash\n"
    assert by_id["c2"].is_error is False
    assert "## Release notes\n\nVersion *2.0* is out." in by_id["c2"].text
    assert by_id["c3"].is_error is True
    assert "a cloud metadata endpoint" in by_id["c3"].text
    assert by_id["c4"].is_error is True
    assert by_id["c4"].text == "<error>Exit code 4\n</error>"
    assert (tmp_path / "out.txt").read_text() == "from-bash\n"
    assert connections.attempts == [("127.0.0.1", server.port)]
    # the model was told about both tools, with their contract metadata
    tools = {t.name: t for t in model.requests[0].tools}
    assert tools["Bash"].metadata["dive.permission.kind"] == "command"
    assert tools["WebFetch"].metadata["dive.permission.kind"] == "url"
