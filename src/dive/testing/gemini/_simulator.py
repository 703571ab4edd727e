"""``GeminiSimulator``: the Gemini API's ``generateContent`` on 127.0.0.1, answering from a script.

One ``POST /{version}/models/{model}:generateContent`` (or ``:streamGenerateContent``) goes
through these steps (``_generate``):

1. a :class:`SimFault` at the head of the script is answered at once (an edge error);
2. the body is parsed and validated (400s in Google's envelope; nothing is consumed): its
   shape (``_request``), the conversation rules (``_validate``), then the generation, tool and
   safety options against the model (``_config``);
3. the next script item is taken (a callable is called with the body, outside any lock);
   an empty script answers a 500 saying so;
4. after the reply's ``delay`` the response starts: signatures are issued and remembered, and
   the response is written as JSON or as SSE chunks (cut, errored or malformed as scripted).

Every request is recorded in ``requests``. The API key goes in ``x-goog-api-key`` (a ``key``
query parameter or an ``authorization`` header also do); without one the answer is a 403.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast
from urllib.parse import parse_qs

from dive.testing._simbase import SimulatorBase
from dive.testing.anthropic._http import Outcome, SimHTTPServer
from dive.testing.gemini import _script
from dive.testing.gemini._config import check_options
from dive.testing.gemini._errors import APIErrorAnswer, default_message
from dive.testing.gemini._outcomes import (
    StreamFault,
    complete_outcome,
    error_outcome,
    fault_outcome,
    stream_outcome,
)
from dive.testing.gemini._render import (
    Issuer,
    finalize_parts,
    render_blocked,
    render_response,
    response_chunks,
)
from dive.testing.gemini._request import (
    Route,
    as_dict,
    error_for_body,
    match_route,
    parse_request,
)
from dive.testing.gemini._script import (
    Reply,
    Script,
    ScriptItem,
    SimBlocked,
    SimCut,
    SimFault,
    SimMalformed,
    SimReply,
    SimStreamError,
)
from dive.testing.gemini._tokens import prompt_tokens
from dive.testing.gemini._validate import validate

__all__ = ["GeminiSimulator", "SimRequest", "simulator"]

MAX_BODY_BYTES = 32 * 1024 * 1024

_REPLY_TYPES = (str, SimReply, SimBlocked, SimFault, SimStreamError, SimCut, SimMalformed)
_DEFAULT_PARTIAL = SimReply(parts=[{"text": "This response is interrupted before it ends."}])


class SimRequest(Mapping[str, Any]):
    """One recorded request: a read-only mapping over its JSON body, with method, path, headers.

    Attributes:
        method: the HTTP method.
        path: the request path (with any query string).
        headers: request headers, lower-cased names.
        body: the parsed JSON body ({} when it was not a JSON object).
        raw: the body bytes.
        route: the parsed ``generateContent`` route (None for any other path).
    """

    __slots__ = ("body", "headers", "method", "path", "raw", "route")

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
        self.route: Route | None = match_route(path)

    @property
    def model(self) -> str | None:
        """The model id of the path (without ``models/``)."""
        return self.route.model if self.route else None

    @property
    def stream(self) -> bool:
        """Whether this was ``streamGenerateContent``."""
        return self.route.stream if self.route else False

    @property
    def api_version(self) -> str | None:
        """``v1beta``, ``v1`` or ``v1alpha``."""
        return self.route.api_version if self.route else None

    def __getitem__(self, key: str) -> Any:
        return self.body[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.body)

    def __len__(self) -> int:
        return len(self.body)

    def __repr__(self) -> str:
        return f"SimRequest({self.method} {self.path}, {self.body!r})"


class GeminiSimulator(SimulatorBase):
    """A local Gemini API (``generateContent`` / ``streamGenerateContent``) answering from a script.

    Use it as a context manager (or call :meth:`start` / :meth:`stop`) and point the SDK at
    :attr:`url`::

        with GeminiSimulator() as sim:
            sim.add(sim.text("Hello!"))
            client = genai.Client(
                api_key="test", http_options=types.HttpOptions(base_url=sim.url)
            )

    Args:
        check_signatures: enforce the thought-signature rules (``_validate``, rule 3).
        fallback: the reply used when the script is empty (default: a 500 saying so).
        host: the interface to bind.
        port: the port (0 picks a free one).
        max_body_bytes: larger bodies get 413.
    """

    def __init__(
        self,
        *,
        check_signatures: bool = True,
        fallback: ScriptItem | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.check_signatures = check_signatures
        self.fallback = fallback
        self.requests: list[SimRequest] = []
        self.errors: list[BaseException] = []
        self._script = Script()
        self._issuer = Issuer()
        self._lock = threading.Lock()
        self._posts = 0
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
    function_call = staticmethod(_script.function_call)
    function_calls = staticmethod(_script.function_calls)
    reply = staticmethod(_script.reply)
    blocked = staticmethod(_script.blocked)

    @property
    def generate_requests(self) -> list[SimRequest]:
        """The recorded ``generateContent`` / ``streamGenerateContent`` requests."""
        with self._lock:
            return [r for r in self.requests if r.route is not None]

    def issued_signature(self, signature: str) -> bool:
        """Whether this simulator served ``signature`` (either base64 alphabet).

        Args:
            signature: a ``thoughtSignature`` as a client sent it back.
        """
        return self._issuer.issued(signature)

    # -- request handling -------------------------------------------------------------------

    def _handle(
        self, method: str, path: str, headers: Mapping[str, str], raw: bytes | None
    ) -> Outcome:
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
            if raw is None:
                raise APIErrorAnswer(413, default_message(413))
            route = recorded.route
            if method != "POST" or route is None:
                raise APIErrorAnswer(404, default_message(404))
            query = parse_qs(path.partition("?")[2])
            if not (
                headers.get("x-goog-api-key") or query.get("key") or headers.get("authorization")
            ):
                raise APIErrorAnswer(403, default_message(403))
            if parse_error is not None:
                raise error_for_body(parse_error)
            return self._generate(body, route)
        except APIErrorAnswer as answer:
            return error_outcome(answer)
        except Exception as exc:
            with self._lock:
                self.errors.append(exc)
            return error_outcome(APIErrorAnswer(500, f"GeminiSimulator internal error: {exc!r}"))

    def _generate(self, body: object, route: Route) -> Outcome:
        with self._lock:
            self._posts += 1
            number = self._posts
        fault = self._script.pop_fault()
        if fault is not None:
            return fault_outcome(fault)
        request = parse_request(body)
        validate(request, issuer=self._issuer, check_signatures=self.check_signatures)
        check_options(request, route.model)
        resolved = self._next_reply(request.body, route, number)
        if isinstance(resolved, SimFault):
            return fault_outcome(resolved)
        tokens = prompt_tokens(request.body)
        response_id = self._issuer.response_id()
        fault_spec: StreamFault | None = None
        chunk_delay = 0.0
        chunks: list[dict[str, Any]]
        if isinstance(resolved, SimBlocked):
            response = render_blocked(
                blocked=resolved,
                prompt_tokens=tokens,
                model_version=route.model,
                response_id=response_id,
            )
            chunks = [response]
        else:
            if isinstance(resolved, str):
                reply = _script.text(resolved)
            elif isinstance(resolved, SimReply):
                reply = resolved
            else:
                fault_spec = resolved
                reply = resolved.reply or _DEFAULT_PARTIAL
            if reply.delay:
                time.sleep(reply.delay)
            chunk_delay = reply.chunk_delay
            # The response starts here: signatures are issued and remembered.
            parts = finalize_parts(reply, self._issuer)
            options: dict[str, Any] = {
                "reply": reply,
                "parts": parts,
                "prompt_tokens": tokens,
                "model_version": route.model,
                "response_id": response_id,
            }
            response = render_response(**options)
            chunks = response_chunks(**options) if route.stream else [response]
        if route.stream and route.sse:
            return stream_outcome(chunks, fault_spec, chunk_delay)
        # streamGenerateContent without alt=sse answers one JSON array (sim choice).
        return complete_outcome(chunks if route.stream else response, fault_spec)

    def _next_reply(self, body: Mapping[str, Any], route: Route, number: int) -> Reply:
        item = self._script.pop()
        if item is None:
            item = self.fallback
        if item is None:
            raise APIErrorAnswer(
                500,
                f"GeminiSimulator: the reply script is exhausted (POST {route.model_path}:"
                f"{route.method} #{number} has no scripted reply); add replies with sim.add(...).",
            )
        try:
            # Callables are user code: check what they return at run time.
            copied = json.loads(json.dumps(body))
            resolved = cast(object, item(copied) if callable(item) else item)
            if not isinstance(resolved, _REPLY_TYPES):
                raise TypeError(f"a script item must be a reply or a fault, not {resolved!r}")
        except Exception as exc:
            with self._lock:
                self.errors.append(exc)
            raise APIErrorAnswer(
                500, f"GeminiSimulator: the scripted reply failed: {exc!r}"
            ) from exc
        return resolved


@contextmanager
def simulator(
    *,
    check_signatures: bool = True,
    fallback: ScriptItem | None = None,
    assert_consumed: bool = False,
) -> Generator[GeminiSimulator]:
    """A running :class:`GeminiSimulator` for a ``with`` block or a pytest fixture.

    ``assert_consumed`` checks on a clean exit that every scripted reply was requested::

        @pytest.fixture
        def sim():
            with simulator(assert_consumed=True) as s:
                yield s

    Args:
        check_signatures: enforce the thought-signature rules on requests.
        fallback: the reply used when the script is empty (default: a 500 saying so).
        assert_consumed: on a clean exit, check that every scripted reply was requested.
    """
    sim = GeminiSimulator(check_signatures=check_signatures, fallback=fallback)
    with sim:
        yield sim
        if assert_consumed:
            sim.assert_consumed()
