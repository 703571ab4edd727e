"""``WebSearch``: a web search through a pluggable :class:`SearchBackend`.

Backends:

- :class:`DuckDuckGoBackend` needs no account: it posts the query to DuckDuckGo's HTML
  results page and reads the result links and snippets with the standard library's HTML
  parser (ads are skipped, redirect links are unwrapped). DuckDuckGo may answer automated
  traffic with a challenge page; that becomes a clear error.
- :class:`SearxngBackend` asks a SearXNG instance (self-hosted or trusted) for JSON results
  (``/search?format=json``); the instance must have ``json`` in ``search.formats``.
- :class:`GoogleCSEBackend` uses the Google Custom Search JSON API with an API key and a
  search engine id.

Each backend takes a ``base_url`` (tests point it at a local server). A backend's endpoint is
fixed by whoever configures it, never by the model, so backends connect normally (proxies
from the environment apply); the URLs in the results are only text until ``WebFetch`` fetches
one under its address policy. Still, the endpoint's answer is bounded: the whole request is
limited to the backend's ``timeout``, the body is read as it streams in and refused past
``max_bytes`` (2 MB by default), and a redirect is not followed but reported as an error
that names the backend and where it pointed (so a configured endpoint cannot send a search,
with its key, somewhere else).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dive.errors import DiveError, UserError
from dive.toolkit._webfetch import require_extras
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

__all__ = [
    "DuckDuckGoBackend",
    "GoogleCSEBackend",
    "SearchBackend",
    "SearchError",
    "SearchResult",
    "SearxngBackend",
    "WebSearch",
    "WebSearchInput",
]

_USER_AGENT = "Mozilla/5.0 (compatible; dive-agents-websearch/0.1)"
MAX_RESPONSE_BYTES = 2_000_000
"""The largest response body a backend reads (its ``max_bytes`` default)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchResult:
    """One search hit.

    Attributes:
        title: the page title as the engine shows it.
        url: the page's address.
        snippet: the engine's excerpt ("" when it gives none).
    """

    title: str
    url: str
    snippet: str = ""


class SearchError(DiveError):
    """A search backend failed; the message says what happened and what to try."""


@runtime_checkable
class SearchBackend(Protocol):
    """Where ``WebSearch`` sends queries."""

    async def search(self, query: str, *, max_results: int) -> list[SearchResult]:
        """At most ``max_results`` results for ``query``, best first.

        Args:
            query: the search terms.
            max_results: the largest number of results wanted.

        Raises:
            SearchError: the backend failed or refused the query.
        """
        ...


async def _request(
    method: str,
    url: str,
    *,
    service: str,
    seconds: float,
    max_bytes: int,
    params: Mapping[str, str] | None = None,
    data: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, str]:
    """``(status, text)`` of one request; transport failures become :class:`SearchError`.

    The whole request is limited to ``seconds``, the body to ``max_bytes`` (read as it
    streams in; a larger body is an error), and a redirect is an error, never followed.
    """
    import httpx2

    try:
        async with (
            asyncio.timeout(seconds),
            httpx2.AsyncClient(timeout=seconds, follow_redirects=False) as client,
        ):
            request = client.build_request(
                method,
                url,
                params=dict(params or {}),
                data=dict(data) if data is not None else None,
                headers={"User-Agent": _USER_AGENT, **(headers or {})},
            )
            response = await client.send(request, stream=True)
            try:
                return response.status_code, await _body(response, service, max_bytes)
            finally:
                await response.aclose()
    except (TimeoutError, httpx2.TimeoutException):
        raise SearchError(f"{service} did not answer within {seconds:g} s; try again") from None
    except httpx2.HTTPError as exc:
        raise SearchError(f"{service} could not be reached at {url} ({exc!r})") from None


async def _body(response: httpx2.Response, service: str, max_bytes: int) -> str:
    """The text of ``response``, read up to ``max_bytes``; a redirect is a SearchError."""
    status = response.status_code
    if 300 <= status < 400:
        location = response.headers.get("location")
        where = "without a Location"
        if location:
            target = urlsplit(str(response.url.join(location)))
            where = f"a redirect to {target.scheme}://{target.netloc}{target.path}"
        raise SearchError(
            f"{service} answered HTTP {status}, {where}; redirects are not followed, so set "
            "the backend's base_url to the address the service answers at"
        )
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > max_bytes:
            raise SearchError(
                f"{service} answered with more than {max_bytes:,} bytes, the most a search "
                "response may have; try a narrower query, or raise the backend's max_bytes"
            )
    try:
        return bytes(body).decode(response.encoding or "utf-8", errors="replace")
    except LookupError:
        return bytes(body).decode("utf-8", errors="replace")


def _object(value: Any) -> dict[str, Any] | None:
    """``value`` if it is a JSON object, else None."""
    return value if isinstance(value, dict) else None  # pyright: ignore[reportUnknownVariableType]


def _json(text: str, service: str) -> dict[str, Any]:
    """The JSON object ``text`` holds; anything else is a :class:`SearchError`."""
    try:
        data = _object(json.loads(text))
    except ValueError:
        data = None
    if data is None:
        raise SearchError(f"{service} did not answer with a JSON object; check its base_url")
    return data


# --- DuckDuckGo ---------------------------------------------------------------------------


def _unwrap(href: str) -> str:
    """The target of a DuckDuckGo redirect link (``/l/?uddg=…``), or ``href`` made absolute."""
    if href.startswith("//"):
        href = "https:" + href
    parts = urlsplit(href)
    if parts.path.endswith("/l/"):
        target = parse_qs(parts.query).get("uddg")
        if target:
            return target[0]
    return href


class _DuckDuckGoParser(HTMLParser):
    """Collects ``result__a`` links (titles) and ``result__snippet`` texts, skipping ads."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.results: list[SearchResult] = []
        self.challenge = False
        self._ad = False
        self._capture: str | None = None  # "title" or "snippet"
        self._tag = ""
        self._depth = 0
        self._text: list[str] = []
        self._href = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        classes = attributes.get("class", "").split()
        if self._capture is not None:
            self._depth += tag == self._tag
            return
        if tag == "form" and "anomaly" in attributes.get("action", ""):
            self.challenge = True
        if tag == "div" and "result" in classes:
            self._ad = "result--ad" in classes
        href = attributes.get("href", "")
        if tag == "a" and "result__a" in classes:
            if self._ad or "/y.js" in href:
                return
            self._start("title", tag, href)
        elif "result__snippet" in classes and not self._ad and self.results:
            self._start("snippet", tag, href)

    def _start(self, what: str, tag: str, href: str) -> None:
        self._capture, self._tag, self._depth, self._text, self._href = what, tag, 1, [], href

    def handle_endtag(self, tag: str) -> None:
        if self._capture is None or tag != self._tag:
            return
        self._depth -= 1
        if self._depth:
            return
        text = " ".join("".join(self._text).split())
        if self._capture == "title":
            self.results.append(SearchResult(title=text, url=_unwrap(self._href)))
        else:
            last = self.results[-1]
            self.results[-1] = SearchResult(title=last.title, url=last.url, snippet=text)
        self._capture = None

    def handle_data(self, data: str) -> None:
        if self._capture is not None:
            self._text.append(data)


def parse_duckduckgo(page: str) -> list[SearchResult]:
    """The results on a DuckDuckGo HTML results page (ads left out).

    Args:
        page: the HTML of ``https://html.duckduckgo.com/html/``'s answer.

    Raises:
        SearchError: the page is DuckDuckGo's challenge for automated traffic.
    """
    parser = _DuckDuckGoParser()
    parser.feed(page)
    parser.close()
    if parser.challenge and not parser.results:
        raise SearchError(
            "DuckDuckGo answered with a challenge for automated traffic (rate limited); "
            "wait a while, or configure another backend (SearxngBackend, GoogleCSEBackend)"
        )
    return [r for r in parser.results if r.url.startswith(("http://", "https://"))]


@dataclass(frozen=True, slots=True, kw_only=True)
class DuckDuckGoBackend:
    """DuckDuckGo's HTML results page: no account or key needed.

    Args:
        base_url: the results page the query is posted to.
        region: a DuckDuckGo region code (``"us-en"``, ``"de-de"``…); None: no preference.
        safe_search: ``"strict"``, ``"moderate"`` or ``"off"``.
        timeout: seconds a search may take.
        max_bytes: the largest response body read; a larger one is an error.
    """

    base_url: str = "https://html.duckduckgo.com/html/"
    region: str | None = None
    safe_search: str = "moderate"
    timeout: float = 15.0
    max_bytes: int = MAX_RESPONSE_BYTES

    async def search(self, query: str, *, max_results: int) -> list[SearchResult]:
        require_extras("DuckDuckGoBackend", ("httpx2",))
        form = {"q": query, "b": ""}
        if self.region:
            form["kl"] = self.region
        form["kp"] = {"strict": "1", "off": "-2"}.get(self.safe_search, "-1")
        status, text = await _request(
            "POST",
            self.base_url,
            service="DuckDuckGo",
            seconds=self.timeout,
            max_bytes=self.max_bytes,
            data=form,
        )
        if status >= 400:
            raise SearchError(
                f"DuckDuckGo answered HTTP {status}; it may be rate limiting automated "
                "searches: wait a while, or configure another backend"
            )
        return parse_duckduckgo(text)[:max_results]


# --- SearXNG and Google ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SearxngBackend:
    """A SearXNG instance's JSON API (``GET /search?format=json``).

    Args:
        base_url: the instance's address (``"https://search.example.org"``).
        categories: SearXNG categories (``"general"``, ``"news"``, ``"it"``…); None: the
            instance's default.
        language: a language code (``"en"``, ``"de"``); None: the instance's default.
        engines: engines to ask (``"duckduckgo,wikipedia"``); None: the instance's default.
        headers: extra request headers (for an instance behind an authenticating proxy).
        timeout: seconds a search may take.
        max_bytes: the largest response body read; a larger one is an error.
    """

    base_url: str
    categories: str | None = None
    language: str | None = None
    engines: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    timeout: float = 15.0
    max_bytes: int = MAX_RESPONSE_BYTES

    async def search(self, query: str, *, max_results: int) -> list[SearchResult]:
        require_extras("SearxngBackend", ("httpx2",))
        params = {"q": query, "format": "json"}
        options = {"categories": self.categories, "language": self.language}
        options["engines"] = self.engines
        params.update({k: v for k, v in options.items() if v})
        url = self.base_url.rstrip("/") + "/search"
        status, text = await _request(
            "GET",
            url,
            service="SearXNG",
            seconds=self.timeout,
            max_bytes=self.max_bytes,
            params=params,
            headers=self.headers,
        )
        if status == 403:
            raise SearchError(
                f"the SearXNG instance at {self.base_url} refused JSON output (HTTP 403): "
                "enable it by adding json to search.formats in its settings.yml"
            )
        if status >= 400:
            raise SearchError(f"the SearXNG instance at {self.base_url} answered HTTP {status}")
        items = _json(text, "SearXNG").get("results")
        if not isinstance(items, list):
            raise SearchError("SearXNG answered JSON without a results list")
        return _results(items, "url", "content")[:max_results]  # pyright: ignore[reportUnknownArgumentType]


def _results(items: Iterable[Any], url_key: str, snippet_key: str) -> list[SearchResult]:
    out: list[SearchResult] = []
    for item in items:
        entry = _object(item)
        if entry is None:
            continue
        url, title, snippet = (entry.get(k) for k in (url_key, "title", snippet_key))
        if isinstance(url, str) and url.startswith(("http://", "https://")):
            out.append(
                SearchResult(
                    title=" ".join(str(title or url).split()),
                    url=url,
                    snippet=" ".join(str(snippet or "").split()),
                )
            )
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class GoogleCSEBackend:
    """The Google Custom Search JSON API (at most 10 results per query).

    Args:
        api_key: the API key (keep it out of source code; read it from your secrets).
        engine_id: the programmable search engine id (``cx``).
        base_url: the API endpoint.
        timeout: seconds a search may take.
        max_bytes: the largest response body read; a larger one is an error.
    """

    api_key: str = field(repr=False)
    engine_id: str
    base_url: str = "https://www.googleapis.com/customsearch/v1"
    timeout: float = 15.0
    max_bytes: int = MAX_RESPONSE_BYTES

    async def search(self, query: str, *, max_results: int) -> list[SearchResult]:
        require_extras("GoogleCSEBackend", ("httpx2",))
        params = {
            "key": self.api_key,
            "cx": self.engine_id,
            "q": query,
            "num": str(max(1, min(max_results, 10))),
        }
        status, text = await _request(
            "GET",
            self.base_url,
            service="Google Custom Search",
            seconds=self.timeout,
            max_bytes=self.max_bytes,
            params=params,
        )
        if status >= 400:
            try:
                error = _object(_json(text, "Google").get("error")) or {}
            except SearchError:
                error = {}
            message = str(error.get("message", ""))
            raise SearchError(
                f"Google Custom Search answered HTTP {status}"
                + (f": {message}" if message else "")
                + ("; check api_key and engine_id" if status in (400, 401, 403) else "")
            )
        items = _json(text, "Google Custom Search").get("items", [])
        found = _results(items if isinstance(items, list) else [], "link", "snippet")  # pyright: ignore[reportUnknownArgumentType]
        return found[:max_results]


# --- the tool -------------------------------------------------------------------------------


class WebSearchInput(BaseModel):
    """The arguments of a ``WebSearch`` call."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=2, description="The search query.")
    max_results: int | None = Field(
        default=None, ge=1, le=20, description="How many results to return (default 8)."
    )
    allowed_domains: list[str] | None = Field(
        default=None,
        description="Only return results from these domains (subdomains included).",
    )
    blocked_domains: list[str] | None = Field(
        default=None, description="Never return results from these domains."
    )


def _on_domain(url: str, domains: Sequence[str]) -> bool:
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    for d in domains:
        d = d.lower().strip().removeprefix("*.").strip(".")
        if d and (host == d or host.endswith("." + d)):
            return True
    return False


class WebSearch(Tool):
    """Searches the web and returns titles, URLs and snippets.

    Annotated read-only and idempotent (``effect_type="read_only"``): a search changes
    nothing. The permission engine matches rule specifiers against the ``query`` argument as
    text (metadata ``dive.permission.argument="query"``, ``dive.permission.kind="text"``).

    Args:
        backend: where queries go; default :class:`DuckDuckGoBackend` (no account needed).
        max_results: results returned when a call does not say (at most 20).
        name: the tool's name.

    Raises:
        MissingExtraError: httpx2 is not installed (extra ``toolkit``) and the default
            backend is used.
        UserError: ``max_results`` is not between 1 and 20.
    """

    def __init__(
        self,
        backend: SearchBackend | None = None,
        *,
        max_results: int = 8,
        name: str = "WebSearch",
    ) -> None:
        if backend is None:
            require_extras("WebSearch", ("httpx2",))
        if not 1 <= max_results <= 20:
            raise UserError(f"WebSearch: max_results must be between 1 and 20, not {max_results}")
        self.backend: SearchBackend = backend if backend is not None else DuckDuckGoBackend()
        self.max_results = max_results
        self.annotations = ToolAnnotations(title="Search the web", read_only=True, idempotent=True)
        self.definition = build_definition(
            name,
            "Search the web and return the top results (title, URL and a snippet each). "
            "Use it for current events and facts past your knowledge, then read promising "
            "pages with WebFetch. Write queries as you would in a search engine; narrow them "
            "with allowed_domains or blocked_domains.",
            schema_of(WebSearchInput),
            self.annotations,
            {"metadata": {"dive.permission.argument": "query", "dive.permission.kind": "text"}},
        )

    def validate(self, arguments: Mapping[str, Any]) -> tuple[Any, str | None]:
        try:
            return WebSearchInput.model_validate(arguments), None
        except ValidationError as exc:
            return None, format_validation_error(self.name, exc)

    def preview(self, arguments: Mapping[str, Any]) -> ToolCallPreview | None:
        query = arguments.get("query")
        return ToolCallPreview(summary=f"Search the web for {query!r}") if query else None

    async def call(self, input: Any, ctx: ToolContext) -> ToolReturn:
        args: WebSearchInput = input
        wanted = args.max_results or self.max_results
        filtered = bool(args.allowed_domains or args.blocked_domains)
        try:
            found = await self.backend.search(
                args.query, max_results=min(wanted * 3, 30) if filtered else wanted
            )
        except SearchError as exc:
            return ToolReturn(content=f"Search failed: {exc}", is_error=True)
        if args.allowed_domains:
            found = [r for r in found if _on_domain(r.url, args.allowed_domains)]
        if args.blocked_domains:
            found = [r for r in found if not _on_domain(r.url, args.blocked_domains)]
        found = found[:wanted]
        if not found:
            return ToolReturn(content=f"No results found for {args.query!r}.")
        lines = [f"Search results for {args.query!r}:", ""]
        for n, r in enumerate(found, 1):
            lines.append(f"{n}. {r.title}\n   {r.url}")
            if r.snippet:
                lines.append(f"   {r.snippet}")
        return ToolReturn(content="\n".join(lines))

    def __repr__(self) -> str:
        return f"WebSearch(backend={self.backend!r})"
