"""``WebFetch``: fetch a URL over http(s) and return it as Markdown or text, SSRF-safe.

Flow of a fetch, for the first URL and again for every redirect hop (at most
``max_redirects``, followed by hand, never by the HTTP client). Only redirects on the same
host are followed (same scheme, host and port, or http to https on port 443 of the host,
see :func:`same_host`); a redirect to another host ends the fetch with a result that names
the target, so the model fetches it with a new call, which the permission rules judge on
its own URL (a ``WebFetch(domain:...)`` rule sees only the ``url`` argument):

1. The URL must be ``http`` or ``https``.
2. Its host is resolved once (an address literal is taken as it is) and **every** address is
   checked against the :class:`~dive.toolkit.AddressPolicy` before any connection is made.
3. The request goes to a checked address, **pinned**: the URL's host is replaced by the
   address literal, so the HTTP stack never resolves a name and cannot be steered elsewhere
   by a second DNS answer (DNS rebinding); the ``Host`` header carries the name, and for
   https the TLS SNI and certificate check use the name (httpcore's ``sni_hostname``
   extension). The client ignores proxy environment variables (a proxy would resolve the
   name itself) and a new client is used per hop, so a connection is never reused for
   another name.
4. The body is read up to ``max_bytes`` (after content decoding) within the fetch's time
   limit; HTML becomes Markdown (``markdownify``), other text comes back as it is, and
   binary content is refused.
"""

from __future__ import annotations

import asyncio
import functools
import html
import re
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dive.errors import MissingExtraError, UserError
from dive.toolkit._ssrf import (
    AddressPolicy,
    AddressRefusedError,
    IPAddress,
    Resolver,
    SystemResolver,
)
from dive.tools import (
    Tool,
    ToolAnnotations,
    ToolCallPreview,
    ToolContext,
    ToolReturn,
    build_definition,
    format_validation_error,
    schema_of,
)

if TYPE_CHECKING:
    import httpx2

__all__ = ["WebFetch", "WebFetchInput", "html_to_markdown", "require_extras", "same_host"]

USER_AGENT = "dive-agents-webfetch/0.1 (+https://pypi.org/project/dive-agents/)"
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/x-ndjson",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/graphql",
    }
)
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.I | re.S)
_BLANK_RUNS = re.compile(r"\n{3,}")


def require_extras(tool: str, modules: tuple[str, ...] = ("httpx2", "markdownify")) -> None:
    """Raise :class:`MissingExtraError` unless ``modules`` are importable (extra ``toolkit``)."""
    missing: list[str] = []
    for module in modules:
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise MissingExtraError(
            f"{tool} needs {' and '.join(missing)}, which are not installed: "
            "pip install 'dive-agents[toolkit]'"
        )


class WebFetchInput(BaseModel):
    """The arguments of a ``WebFetch`` call."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        min_length=1,
        description="The full http:// or https:// URL to fetch.",
    )
    offset: int = Field(
        default=0,
        ge=0,
        description="Character offset into the converted page; use the offset a truncated "
        "result names to read on.",
    )


class _FetchError(Exception):
    """A fetch failed; the message is what the model is told."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Page:
    url: str
    status: int
    reason: str
    mime: str
    body: bytes
    charset: str | None
    truncated: bool
    redirects: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class _Elsewhere:
    """A redirect to another host: not followed, handed back to the model."""

    url: str  # the URL that redirected
    status: int
    target: str
    hops: int  # same-host redirects followed before it

    def message(self, requested: str) -> str:
        text = (
            f"{self.url} redirected (HTTP {self.status}) to another host: {self.target}\n"
            f"It was not followed. To fetch it, call WebFetch again with url={self.target!r}."
        )
        return text + (f"\nRedirected from: {requested}" if self.hops else "")


def _port(url: httpx2.URL) -> int:
    return url.port or _DEFAULT_PORTS.get(url.scheme, 0)


def same_host(current: httpx2.URL, target: httpx2.URL) -> bool:
    """Whether WebFetch follows a redirect from ``current`` to ``target`` itself.

    Only on the same origin (scheme, host and port; the host compared without case), or an
    upgrade from http to https on port 443 of the same host. A redirect anywhere else (a
    subdomain, another port, a downgrade to http) is handed back to the model, so the next
    fetch goes through the permission rules for its own URL.

    Args:
        current: the URL that answered with the redirect.
        target: the absolute URL it redirects to.
    """
    if current.raw_host.lower() != target.raw_host.lower():
        return False
    if (current.scheme, _port(current)) == (target.scheme, _port(target)):
        return True
    return current.scheme == "http" and target.scheme == "https" and _port(target) == 443


def _check_scheme(url: httpx2.URL) -> None:
    if url.scheme not in _DEFAULT_PORTS:
        raise _FetchError(
            f"the scheme {url.scheme or '(none)'!r} is not supported: only http and https "
            "URLs can be fetched"
        )


@functools.cache
def _converter_class() -> Any:
    """The markdownify converter, minus the parts of a page that are not its text."""
    from markdownify import MarkdownConverter

    def drop(self: Any, el: Any, text: str, parent_tags: Any) -> str:
        return ""

    class _Converter(MarkdownConverter):
        convert_head = drop
        convert_title = drop
        convert_noscript = drop
        convert_template = drop
        convert_svg = drop
        convert_iframe = drop
        convert_object = drop
        convert_embed = drop

    return _Converter


def html_to_markdown(document: str) -> tuple[str | None, str]:
    """``(title, markdown)`` of an HTML document (scripts, styles and the head dropped).

    Args:
        document: the HTML text.

    Raises:
        MissingExtraError: markdownify is not installed.
    """
    require_extras("html_to_markdown")
    found = _TITLE.search(document)
    title = " ".join(html.unescape(found.group(1)).split()) if found else None
    converter = _converter_class()(heading_style="ATX", bullets="-", strip_document="strip")
    markdown: str = converter.convert(document)
    lines = [line.rstrip() for line in markdown.strip().splitlines()]
    return title or None, _BLANK_RUNS.sub("\n\n", "\n".join(lines))


def _mime_of(content_type: str) -> tuple[str, str | None]:
    mime, _, params = content_type.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'")
    return mime.strip().lower(), charset


def _is_text(mime: str) -> bool:
    return (
        mime.startswith("text/")
        or mime in _TEXT_TYPES
        or mime in _HTML_TYPES
        or mime.endswith(("+json", "+xml"))
    )


def _sniff(body: bytes) -> str:
    head = body[:1024]
    if b"\x00" in head:
        return "application/octet-stream"
    lowered = head.lstrip().lower()
    if lowered.startswith((b"<!doctype html", b"<html")) or b"<body" in lowered:
        return "text/html"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the sample's end
            return "application/octet-stream"
    return "text/plain"


def _decode(page: _Page) -> str:
    charset = page.charset
    if charset is None and page.mime in _HTML_TYPES:
        found = _META_CHARSET.search(page.body[:4096])
        charset = found.group(1).decode("ascii") if found else None
    try:
        return page.body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return page.body.decode("utf-8", errors="replace")


def _page_text(page: _Page) -> tuple[str | None, str]:
    """``(title, text)`` of a page: HTML as Markdown, other text as it is."""
    text = _decode(page)
    if page.mime in _HTML_TYPES:
        return html_to_markdown(text)
    return None, text


class WebFetch(Tool):
    """Fetches an http(s) URL and returns its content: HTML as Markdown, other text as is.

    Annotated read-only, idempotent and open world (``effect_type="external_side_effect"``,
    as open world implies). The permission engine matches rules such as
    ``WebFetch(domain:example.com)`` against the ``url`` argument (metadata
    ``dive.permission.argument="url"``, ``dive.permission.kind="url"``).

    SSRF protection: only ``http`` and ``https``; every address the host resolves to is
    checked before connecting (loopback, private, link-local, CGNAT, multicast, reserved,
    IPv4-mapped forms and cloud metadata endpoints are refused unless allow-listed); the
    connection is pinned to the checked address; each redirect is checked again; size and
    time are capped. See :class:`~dive.toolkit.AddressPolicy` for the rules.

    Redirects: only those on the same host are followed (same scheme, host and port, or an
    upgrade from http to https on port 443). A redirect to another host is not followed: the
    result (not an error) names the target URL and tells the model to call ``WebFetch``
    with it, so that call goes through the approval gate and the permission rules for its
    own host. An open redirect on an allowed domain therefore cannot reach a denied one.

    Args:
        resolver: turns host names into addresses; default: the system resolver
            (``getaddrinfo``). Tests give a stub.
        allow: allow-list entries that lift the refusal (addresses, networks, host names,
            each optionally with a port: ``"10.0.0.0/8"``, ``"127.0.0.1:8080"``,
            ``"intranet.example"``); see :class:`~dive.toolkit.AddressPolicy`.
        max_bytes: bytes of (decoded) body read; a larger response is cut there, and the
            result says so.
        max_chars: characters of converted text returned per call; the result names the
            ``offset`` to read on.
        timeout: seconds a whole fetch (lookups, redirects, body) may take.
        max_redirects: same-host redirects followed before the fetch fails.
        verify: TLS verification: True (system trust store), False (not recommended), or
            an ``ssl.SSLContext`` (for example with a corporate CA).
        user_agent: the ``User-Agent`` header sent.
        name: the tool's name.

    Raises:
        MissingExtraError: httpx2 or markdownify is not installed (extra ``toolkit``).
        UserError: a limit is not positive or an allow-list entry is not understood.
    """

    def __init__(
        self,
        *,
        resolver: Resolver | None = None,
        allow: Iterable[str] = (),
        max_bytes: int = 5_000_000,
        max_chars: int = 100_000,
        timeout: float = 30.0,
        max_redirects: int = 5,
        verify: ssl.SSLContext | bool = True,
        user_agent: str = USER_AGENT,
        name: str = "WebFetch",
    ) -> None:
        require_extras("WebFetch")
        if not (max_bytes > 0 and max_chars > 0 and timeout > 0 and max_redirects >= 0):
            raise UserError(
                "WebFetch: max_bytes, max_chars and timeout must be > 0 and max_redirects >= 0"
            )
        self.resolver: Resolver = resolver if resolver is not None else SystemResolver()
        self.policy = AddressPolicy(allow)
        self.max_bytes = max_bytes
        self.max_chars = max_chars
        self.timeout = float(timeout)
        self.max_redirects = max_redirects
        self.verify = verify
        self.user_agent = user_agent
        self.annotations = ToolAnnotations(
            title="Fetch a web page", read_only=True, idempotent=True, open_world=True
        )
        self.definition = build_definition(
            name,
            self._description(),
            schema_of(WebFetchInput),
            self.annotations,
            {"metadata": {"dive.permission.argument": "url", "dive.permission.kind": "url"}},
        )

    def _description(self) -> str:
        return (
            "Fetch a public web page or text resource over http or https and return its "
            "content: HTML converted to Markdown, other text (JSON, plain text, source code) "
            "as it is.\n"
            "- Give a full URL; http and https only. Private, local and cloud-metadata "
            "addresses are refused.\n"
            f"- Redirects on the same host are followed (at most {self.max_redirects}); the "
            "result names the final URL. A redirect to another host is not followed: the "
            "result gives its URL; call WebFetch again with it to fetch it.\n"
            f"- At most {self.max_chars:,} characters come back per call; a truncated result "
            "names the offset to pass to read on.\n"
            "- Binary content (images, PDFs, archives) is not returned.\n"
            "- Pages that need JavaScript or a login may come back empty or as a login page."
        )

    def validate(self, arguments: Mapping[str, Any]) -> tuple[Any, str | None]:
        try:
            return WebFetchInput.model_validate(arguments), None
        except ValidationError as exc:
            return None, format_validation_error(self.name, exc)

    def preview(self, arguments: Mapping[str, Any]) -> ToolCallPreview | None:
        url = arguments.get("url")
        return ToolCallPreview(summary=f"Fetch {url}") if isinstance(url, str) else None

    async def call(self, input: Any, ctx: ToolContext) -> ToolReturn:
        args: WebFetchInput = input
        try:
            async with asyncio.timeout(self.timeout):
                page = await self._fetch(args.url)
        except TimeoutError:
            return _error(
                f"Fetching {args.url} took longer than {self.timeout:g} s and was stopped."
            )
        except (AddressRefusedError, _FetchError) as exc:
            return _error(f"Could not fetch {args.url}: {exc}")
        if isinstance(page, _Elsewhere):
            return ToolReturn(content=page.message(args.url))
        # decoding and conversion of a large page take a while: off the event loop
        title, text = await asyncio.to_thread(_page_text, page)
        return self._render(args.url, page, title, text, args.offset)

    async def _fetch(self, url: str) -> _Page | _Elsewhere:
        """Fetch ``url`` under the policy, following same-host redirects by hand.

        A redirect to another host ends the fetch with :class:`_Elsewhere` (no time limit
        here; the caller sets one).
        """
        import httpx2

        try:
            current = httpx2.URL(url)
        except (httpx2.InvalidURL, TypeError) as exc:
            raise _FetchError(f"{url!r} is not a valid URL ({exc})") from None
        for hop in range(self.max_redirects + 1):
            page_or_target = await self._hop(current)
            if isinstance(page_or_target, _Page):
                return replace(page_or_target, redirects=hop)
            status, location = page_or_target
            try:
                target = current.join(location)
            except (httpx2.InvalidURL, TypeError) as exc:
                raise _FetchError(f"a redirect pointed to an invalid URL ({exc})") from None
            _check_scheme(target)
            if not same_host(current, target):
                return _Elsewhere(url=str(current), status=status, target=str(target), hops=hop)
            current = target
        raise _FetchError(
            f"it redirected more than {self.max_redirects} times (last target: {current})"
        )

    async def _hop(self, url: httpx2.URL) -> _Page | tuple[int, str]:
        """One request: the page, or the status and ``Location`` of a redirect."""
        import httpx2

        _check_scheme(url)
        if not url.raw_host:
            raise _FetchError(f"{url} has no host")
        host = url.raw_host.decode("ascii")
        port = url.port or _DEFAULT_PORTS[url.scheme]
        try:
            addresses = await self.policy.checked_addresses(host, port, self.resolver)
        except OSError as exc:
            raise _FetchError(f"the host {host} could not be resolved ({exc})") from None
        failures: list[str] = []
        for address in addresses:
            async with self._client() as client:
                try:
                    response = await client.send(self._request(client, url, address), stream=True)
                except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
                    failures.append(f"{address}: {exc or type(exc).__name__}")
                    continue
                except httpx2.HTTPError as exc:
                    raise _FetchError(f"the request to {host} failed ({exc!r})") from None
                try:
                    return await self._read(url, response)
                finally:
                    await response.aclose()
        raise _FetchError(f"could not connect to {host} ({'; '.join(failures)})")

    def _client(self) -> httpx2.AsyncClient:
        import httpx2

        return httpx2.AsyncClient(
            trust_env=False,  # no proxy: the connection must go to the checked address
            follow_redirects=False,
            verify=self.verify,
            timeout=httpx2.Timeout(self.timeout),
        )

    def _request(
        self, client: httpx2.AsyncClient, url: httpx2.URL, address: IPAddress
    ) -> httpx2.Request:
        """A request for ``url`` connecting to ``address``; HTTP and TLS keep the name."""
        extensions: dict[str, Any] = {}
        if url.scheme == "https" and str(address) != url.host:
            extensions["sni_hostname"] = url.raw_host.decode("ascii")
        headers = {
            "Host": url.netloc.decode("ascii"),
            "User-Agent": self.user_agent,
            "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
            "Accept-Encoding": "gzip, deflate",
        }
        pinned = url.copy_with(host=str(address), fragment=None)
        return client.build_request("GET", pinned, headers=headers, extensions=extensions)

    async def _read(self, url: httpx2.URL, response: httpx2.Response) -> _Page | tuple[int, str]:
        location = response.headers.get("location")
        if response.status_code in _REDIRECTS and location:
            return response.status_code, location
        mime, charset = _mime_of(response.headers.get("content-type", ""))
        if mime and not _is_text(mime):
            raise _FetchError(
                f"it returned {mime} content, which WebFetch does not return (only HTML and text)"
            )
        limit = self.max_bytes if response.status_code < 400 else min(self.max_bytes, 65536)
        body = bytearray()
        truncated = False
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > limit:
                truncated = True
                del body[limit:]
                break
        data = bytes(body)
        if not mime:
            mime = _sniff(data)
            if not _is_text(mime):
                raise _FetchError("it returned binary content, which WebFetch does not return")
        return _Page(
            url=str(url.copy_with(fragment=None)),
            status=response.status_code,
            reason=response.reason_phrase,
            mime=mime,
            body=data,
            charset=charset,
            truncated=truncated,
        )

    def _render(
        self, requested: str, page: _Page, title: str | None, text: str, offset: int
    ) -> ToolReturn:
        header = [f"URL: {page.url}"]
        if page.redirects:
            header.append(f"Redirected from: {requested}")
        header.append(f"Content-Type: {page.mime}")
        if title:
            header.append(f"Title: {title}")
        if page.status >= 400:
            excerpt = text[:2000]
            return _error(
                f"HTTP {page.status} {page.reason} from {page.url}\n"
                + "\n".join(header[1:])
                + (f"\n\n{excerpt}" if excerpt.strip() else "")
            )
        if offset and offset >= len(text):
            return _error(
                f"offset {offset} is past the end of {page.url} ({len(text):,} characters)"
            )
        end = min(len(text), offset + self.max_chars)
        notes: list[str] = []
        if offset or end < len(text):
            notes.append(
                f"[Showing characters {offset:,}-{end:,} of {len(text):,}."
                + (
                    f" Call WebFetch again with offset={end} to read on.]"
                    if end < len(text)
                    else "]"
                )
            )
        if page.truncated:
            notes.append(
                f"[The response was larger than {self.max_bytes:,} bytes; only the first "
                f"{self.max_bytes:,} bytes were read.]"
            )
        body = text[offset:end] if text.strip() else "(the page has no text content)"
        return ToolReturn(
            content="\n".join(header) + "\n\n" + body + "".join(f"\n\n{n}" for n in notes)
        )

    def __repr__(self) -> str:
        return f"WebFetch(allow={list(self.policy.allow)!r})"


def _error(text: str) -> ToolReturn:
    return ToolReturn(content=text, is_error=True)
