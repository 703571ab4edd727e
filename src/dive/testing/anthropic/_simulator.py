"""``AnthropicSimulator``: the Messages API on 127.0.0.1, answering from a script.

One ``POST /v1/messages`` goes through these steps (``_messages``):

1. a :class:`SimFault` at the head of the script is answered at once (an edge error);
2. the body is parsed and validated (400s with the API's messages; nothing is consumed);
3. the cache plan is computed (reads and writes, not yet visible to anyone);
4. a cache pre-warm (``max_tokens: 0``) is answered without consuming the script;
5. the next script item is taken (a callable is called with the body, outside any lock);
   an empty script answers a 500 saying so;
6. after the reply's ``delay`` the response starts: signatures are remembered, the cache plan
   is committed, and the message is written as JSON or as an SSE stream (cut, errored or
   malformed as scripted).

Step 2 includes the MCP connector's shape (``_mcp``: ``mcp_servers`` and ``mcp_toolset``
tools, with their beta flag). ``POST /v1/messages/count_tokens`` runs steps 2 and 3's token
count only. Vertex AI's and Bedrock's URL shapes (``_platforms``) are the same two
endpoints under another path and body convention; Bedrock streams in AWS event-stream
frames. Every response carries ``request-id``; every request is recorded in ``requests``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

from dive.testing._simbase import SimulatorBase
from dive.testing.anthropic import _script
from dive.testing.anthropic._cache import (
    CachePlan,
    PromptCache,
    SimClock,
    collect_breakpoints,
    flatten,
)
from dive.testing.anthropic._errors import APIErrorAnswer, default_message
from dive.testing.anthropic._http import Outcome, SimHTTPServer
from dive.testing.anthropic._mcp import check_mcp
from dive.testing.anthropic._models import min_cacheable_tokens
from dive.testing.anthropic._outcomes import (
    StreamFault,
    complete_outcome,
    error_outcome,
    fault_outcome,
    json_outcome,
    stream_outcome,
)
from dive.testing.anthropic._platforms import (
    PlatformRoute,
    bedrock_outcome,
    match_platform,
    platform_body,
)
from dive.testing.anthropic._render import Issuer, finalize_content, message_events, render_message
from dive.testing.anthropic._request import ParsedRequest, as_dict, error_for_body, parse_request
from dive.testing.anthropic._script import (
    Reply,
    Script,
    ScriptItem,
    SimCut,
    SimFault,
    SimMalformed,
    SimReply,
    SimStreamError,
)
from dive.testing.anthropic._validate import validate

__all__ = ["AnthropicSimulator", "SimRequest", "simulator"]

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
MAX_BODY_BYTES = 32 * 1024 * 1024

_REPLY_TYPES = (str, SimReply, SimFault, SimStreamError, SimCut, SimMalformed)
_DEFAULT_PARTIAL = SimReply(
    content=[{"type": "text", "text": "This response is interrupted before it ends."}]
)


class SimRequest(Mapping[str, Any]):
    """One recorded request: a read-only mapping over its JSON body, with method, path, headers.

    Attributes:
        method: the HTTP method.
        path: the request path (with any query string).
        headers: request headers, lower-cased names.
        body: the parsed JSON body ({} when it was not a JSON object).
        raw: the body bytes.
    """

    __slots__ = ("body", "headers", "method", "path", "raw")

    def __init__(
        self,
        *,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: dict[str, Any],
        raw: bytes,
    ) -> None:
        self.method = method
        self.path = path
        self.headers = dict(headers)
        self.body = body
        self.raw = raw

    def __getitem__(self, key: str) -> Any:
        return self.body[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.body)

    def __len__(self) -> int:
        return len(self.body)

    def __repr__(self) -> str:
        return f"SimRequest({self.method} {self.path}, {self.body!r})"


class AnthropicSimulator(SimulatorBase):
    """A local Anthropic Messages API that answers from a script.

    Use it as a context manager (or call :meth:`start` / :meth:`stop`) and point an SDK at
    :attr:`url`::

        with AnthropicSimulator() as sim:
            sim.add(sim.text("Hello!"))
            client = anthropic.Anthropic(base_url=sim.url, api_key="test", max_retries=0)

    Args:
        min_cacheable_tokens: per-model minimum cacheable prefix, by model id or family,
            overriding the defaults of wire-apis.md A9 item 6.
        strict_roles: reject consecutive same-role messages and a leading assistant message
            (the older API) instead of merging them.
        clock: the cache's clock (default: a manual :class:`SimClock` at 0).
        fallback: the reply used when the script is empty (default: a 500 saying so).
        host: the interface to bind.
        port: the port (0 picks a free one).
        max_body_bytes: larger bodies get 413 ``request_too_large``.
    """

    def __init__(
        self,
        *,
        min_cacheable_tokens: Mapping[str, int] | None = None,
        strict_roles: bool = False,
        clock: SimClock | None = None,
        fallback: ScriptItem | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.min_cacheable_tokens = dict(min_cacheable_tokens or {})
        self.strict_roles = strict_roles
        self.clock = clock or SimClock()
        self.fallback = fallback
        self.cache = PromptCache(self.clock)
        self.requests: list[SimRequest] = []
        self.errors: list[BaseException] = []
        self._script = Script()
        self._issuer = Issuer()
        self._lock = threading.Lock()
        self._message_posts = 0
        self._http = SimHTTPServer(
            self._handle, host=host, port=port, max_body_bytes=max_body_bytes
        )

    # -- lifecycle --------------------------------------------------------------------------

    # -- the script -------------------------------------------------------------------------

    def add(self, *items: ScriptItem) -> None:
        """Append replies, faults or callables to the script.

        Args:
            items: replies (:class:`SimReply`, strings), faults or callables, answered in order.
        """
        self._script.add(items)

    text = staticmethod(_script.text)
    tool_use = staticmethod(_script.tool_use)
    reply = staticmethod(_script.reply)

    @property
    def message_requests(self) -> list[SimRequest]:
        """The recorded message requests: ``POST /v1/messages``, and Vertex's and Bedrock's."""
        with self._lock:
            return [r for r in self.requests if _is_message_route(r.path.split("?", 1)[0])]

    def issued_thinking(self, signature: str) -> str | None:
        """The thinking text issued with a signature (None if this simulator never issued it).

        Args:
            signature: a thinking block's signature.
        """
        return self._issuer.issued_thinking(signature)

    # -- request handling -------------------------------------------------------------------

    def _handle(
        self, method: str, path: str, headers: Mapping[str, str], raw: bytes | None
    ) -> Outcome:
        request_id = self._issuer.request_id()
        body: object = None
        parse_error: ValueError | None = None
        if raw is not None:
            try:
                body = json.loads(raw) if raw else None
            except ValueError as exc:
                parse_error = exc
        recorded = SimRequest(
            method=method, path=path, headers=headers, body=as_dict(body) or {}, raw=raw or b""
        )
        with self._lock:
            self.requests.append(recorded)
        try:
            route = path.split("?", 1)[0].rstrip("/")
            platform = match_platform(route)
            if raw is None:
                raise APIErrorAnswer(413, default_message("request_too_large"))
            known = route in (MESSAGES_PATH, COUNT_TOKENS_PATH) or platform is not None
            if method != "POST" or not known:
                raise APIErrorAnswer(404, default_message("not_found_error"))
            if not headers.get("x-api-key") and not headers.get("authorization"):
                raise APIErrorAnswer(401, "x-api-key header is required")
            if parse_error is not None:
                raise error_for_body(parse_error)
            betas = frozenset(
                b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()
            )
            if platform is not None:
                return self._platform(platform, body, betas, request_id)
            if route == COUNT_TOKENS_PATH:
                return self._count_tokens(body, betas, request_id)
            return self._messages(body, betas, request_id)
        except APIErrorAnswer as answer:
            return error_outcome(answer, request_id)
        except Exception as exc:
            with self._lock:
                self.errors.append(exc)
            answer = APIErrorAnswer(500, f"AnthropicSimulator internal error: {exc!r}")
            return error_outcome(answer, request_id)

    def _platform(
        self, route: PlatformRoute, body: object, betas: frozenset[str], request_id: str
    ) -> Outcome:
        """A Vertex AI or Bedrock request, answered by the Messages handler."""
        try:
            messages, betas = platform_body(route, body, betas)
            if route.count:
                outcome = self._count_tokens(messages, betas, request_id)
            else:
                outcome = self._messages(messages, betas, request_id)
        except APIErrorAnswer as answer:
            outcome = error_outcome(answer, request_id)
        return bedrock_outcome(outcome, request_id) if route.platform == "bedrock" else outcome

    def _checked(
        self, body: object, betas: frozenset[str], *, count_only: bool
    ) -> tuple[ParsedRequest, CachePlan]:
        request = parse_request(body, count_only=count_only, betas=betas)
        check_mcp(request.body, betas)
        validate(
            request,
            issued_thinking=self._issuer.issued_thinking,
            strict_roles=self.strict_roles,
        )
        segments = flatten(request)
        breakpoints = collect_breakpoints(request, segments)
        minimum = min_cacheable_tokens(request.model, self.min_cacheable_tokens)
        return request, self.cache.plan(segments, breakpoints, minimum)

    def _count_tokens(self, body: object, betas: frozenset[str], request_id: str) -> Outcome:
        _, plan = self._checked(body, betas, count_only=True)
        return json_outcome(200, {"input_tokens": plan.total_tokens}, request_id)

    def _messages(self, body: object, betas: frozenset[str], request_id: str) -> Outcome:
        with self._lock:
            self._message_posts += 1
            number = self._message_posts
        fault = self._script.pop_fault()
        if fault is not None:
            return fault_outcome(fault, request_id)
        request, plan = self._checked(body, betas, count_only=False)
        if request.max_tokens == 0:
            self.cache.commit(plan)
            message = render_message(
                message_id=self._issuer.message_id(),
                model=request.model,
                reply=SimReply(stop_reason="max_tokens"),
                content=[],
                plan=plan,
                generated=False,
            )
            return json_outcome(200, message, request_id)
        resolved = self._next_reply(request, number)
        if isinstance(resolved, SimFault):
            return fault_outcome(resolved, request_id)
        fault_spec: StreamFault | None = None
        if isinstance(resolved, str):
            reply = _script.text(resolved)
        elif isinstance(resolved, SimReply):
            reply = resolved
        else:
            fault_spec = resolved
            reply = resolved.reply or _DEFAULT_PARTIAL
        if reply.delay:
            time.sleep(reply.delay)
        # The response starts here: signatures are issued and cache entries become visible.
        content = finalize_content(reply.content, self._issuer)
        self.cache.commit(plan)
        message = render_message(
            message_id=self._issuer.message_id(),
            model=request.model,
            reply=reply,
            content=content,
            plan=plan,
        )
        if request.stream:
            events = message_events(message, pings=reply.pings)
            return stream_outcome(events, fault_spec, request_id, reply.event_delay)
        return complete_outcome(message, fault_spec, request_id)

    def _next_reply(self, request: ParsedRequest, number: int) -> Reply:
        item = self._script.pop()
        if item is None:
            item = self.fallback
        if item is None:
            raise APIErrorAnswer(
                500,
                f"AnthropicSimulator: the reply script is exhausted (POST {MESSAGES_PATH} "
                f"#{number} has no scripted reply); add replies with sim.add(...).",
                headers={"x-should-retry": "false"},
            )
        try:
            # Callables are user code: check what they return at run time.
            body = json.loads(json.dumps(request.body))
            resolved = cast(object, item(body) if callable(item) else item)
            if not isinstance(resolved, _REPLY_TYPES):
                raise TypeError(f"a script item must be a reply or a fault, not {resolved!r}")
        except Exception as exc:
            with self._lock:
                self.errors.append(exc)
            raise APIErrorAnswer(
                500,
                f"AnthropicSimulator: the scripted reply failed: {exc!r}",
                headers={"x-should-retry": "false"},
            ) from exc
        return resolved


def _is_message_route(route: str) -> bool:
    if route == MESSAGES_PATH:
        return True
    platform = match_platform(route)
    return platform is not None and not platform.count


@contextmanager
def simulator(
    *,
    min_cacheable_tokens: Mapping[str, int] | None = None,
    strict_roles: bool = False,
    clock: SimClock | None = None,
    fallback: ScriptItem | None = None,
    assert_consumed: bool = False,
) -> Generator[AnthropicSimulator]:
    """A running :class:`AnthropicSimulator` for a ``with`` block or a pytest fixture.

    ``assert_consumed`` checks on a clean exit that every scripted reply was requested::

        @pytest.fixture
        def sim():
            with simulator() as s:
                yield s

    Args:
        min_cacheable_tokens: per-model minimum cacheable prefix, by model id or family.
        strict_roles: reject consecutive same-role messages and a leading assistant message.
        clock: the cache's clock (default: a manual :class:`SimClock` at 0).
        fallback: the reply used when the script is empty (default: a 500 saying so).
        assert_consumed: on a clean exit, check that every scripted reply was requested.
    """
    sim = AnthropicSimulator(
        min_cacheable_tokens=min_cacheable_tokens,
        strict_roles=strict_roles,
        clock=clock,
        fallback=fallback,
    )
    with sim:
        yield sim
        if assert_consumed:
            sim.assert_consumed()
