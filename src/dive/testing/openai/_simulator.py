"""``OpenAISimulator``: Chat Completions and Responses on 127.0.0.1, answering from a script.

One ``POST /v1/chat/completions`` or ``POST /v1/responses`` goes through these steps:

1. a :class:`SimFault` at the head of the script is answered at once (an edge error);
2. the body is parsed and validated (400s with the API's messages; nothing is consumed);
3. the prompt-cache plan is computed (reads and writes, not yet visible to anyone);
4. the next script item is taken (a callable is called with the body, outside any lock);
   an empty script answers a 500 saying so;
5. after the reply's ``delay`` the response starts: the cache plan is committed, ids and
   encrypted reasoning contents are issued, a stored response (``store`` not false) is kept
   for ``previous_response_id`` and ``item_reference``, and the reply is written as JSON or as
   an SSE stream (cut, errored, malformed or truncated as scripted).

Both endpoints share one script. Every response carries ``x-request-id``; every request is
recorded in ``requests``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from typing import Any, cast

from dive.testing._simbase import SimulatorBase
from dive.testing.anthropic._http import Outcome, SimHTTPServer
from dive.testing.anthropic._simulator import SimRequest
from dive.testing.openai import _script
from dive.testing.openai._cache import PromptCache, SimClock
from dive.testing.openai._chat import (
    ResolvedCall,
    completion_chunks,
    is_reasoning_model,
    render_completion,
    validate_chat,
)
from dive.testing.openai._errors import (
    APIErrorAnswer,
    default_message,
    default_type,
    invalid_request,
    status_for_code,
)
from dive.testing.openai._outcomes import (
    StreamFault,
    complete_outcome,
    error_outcome,
    fault_outcome,
    stream_outcome,
)
from dive.testing.openai._render import Issuer, usage_for
from dive.testing.openai._responses import (
    build_output,
    render_response,
    response_events,
    validate_responses,
)
from dive.testing.openai._script import (
    Reply,
    Script,
    ScriptItem,
    SimCut,
    SimFault,
    SimMalformed,
    SimReply,
    SimStreamError,
    SimTruncated,
)
from dive.testing.openai._tokens import chat_prompt, responses_prompt

__all__ = ["OpenAISimulator", "SimRequest", "simulator"]

CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
MAX_BODY_BYTES = 32 * 1024 * 1024
IN_MEMORY_TTL = 600.0
EXTENDED_TTL = 24 * 3600.0
EPOCH = 1_750_000_000
"""``created`` timestamps are this plus the simulator clock's seconds."""

MISSING_KEY = (
    "You didn't provide an API key. You need to provide your API key in an Authorization "
    "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field "
    "(with blank username) if you're accessing the API from your browser and are prompted for "
    "a username and password. You can obtain an API key from "
    "https://platform.openai.com/account/api-keys."
)
UNPARSABLE_BODY = (
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
    "using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was "
    "sent was not valid JSON. If you have trouble figuring out how to fix this, please contact "
    "us through our help center at help.openai.com.)"
)

_REPLY_TYPES = (str, SimReply, SimFault, SimStreamError, SimCut, SimMalformed, SimTruncated)
_DEFAULT_PARTIAL = SimReply(text="This response is interrupted before it ends.")


class OpenAISimulator(SimulatorBase):
    """A local OpenAI API (Chat Completions and Responses) that answers from a script.

    Use it as a context manager (or call :meth:`start` / :meth:`stop`) and point an SDK at
    :attr:`url` (which ends in ``/v1``)::

        with OpenAISimulator() as sim:
            sim.add(sim.text("Hello!"))
            client = openai.OpenAI(base_url=sim.url, api_key="test", max_retries=0)

    Args:
        clock: the cache's clock and the source of ``created`` timestamps (default: a manual
            :class:`SimClock` at 0).
        fallback: the reply used when the script is empty (default: a 500 saying so).
        reasoning_model: which models reject ``max_tokens`` (default: names starting with
            ``o<digit>`` or ``gpt-5``).
        cache_ttl: seconds an in-memory prompt-cache entry lives after its last use
            (``prompt_cache_retention: "24h"`` requests use 24 hours).
        host: the interface to bind.
        port: the port (0 picks a free one).
        max_body_bytes: larger bodies get 413.
    """

    def __init__(
        self,
        *,
        clock: SimClock | None = None,
        fallback: ScriptItem | None = None,
        reasoning_model: Callable[[str], bool] = is_reasoning_model,
        cache_ttl: float = IN_MEMORY_TTL,
        host: str = "127.0.0.1",
        port: int = 0,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.clock = clock or SimClock()
        self.fallback = fallback
        self.reasoning_model = reasoning_model
        self.cache_ttl = cache_ttl
        self.cache = PromptCache(self.clock)
        self.requests: list[SimRequest] = []
        self.errors: list[BaseException] = []
        self._script = Script()
        self._issuer = Issuer()
        self._lock = threading.Lock()
        self._posts = 0
        self._stored_responses: dict[str, list[dict[str, Any]]] = {}
        self._stored_items: dict[str, dict[str, Any]] = {}
        self._http = SimHTTPServer(
            self._handle, host=host, port=port, max_body_bytes=max_body_bytes
        )

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The base URL for the SDK, e.g. ``http://127.0.0.1:54321/v1``."""
        return self.origin + "/v1"

    # -- the script -------------------------------------------------------------------------

    def add(self, *items: ScriptItem) -> None:
        """Append replies, faults or callables to the script (shared by both endpoints).

        Args:
            items: replies (:class:`SimReply`, strings), faults or callables, answered in order.
        """
        self._script.add(items)

    text = staticmethod(_script.text)
    refusal = staticmethod(_script.refusal)
    tool_call = staticmethod(_script.tool_call)
    tool_calls = staticmethod(_script.tool_calls)
    reply = staticmethod(_script.reply)

    # -- inspection -------------------------------------------------------------------------

    def _on(self, path: str) -> list[SimRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.split("?", 1)[0].rstrip("/") == path]

    @property
    def chat_requests(self) -> list[SimRequest]:
        """The recorded ``POST /v1/chat/completions`` requests."""
        return self._on(CHAT_PATH)

    @property
    def responses_requests(self) -> list[SimRequest]:
        """The recorded ``POST /v1/responses`` requests."""
        return self._on(RESPONSES_PATH)

    def issued_reasoning(self, encrypted_content: str) -> str | None:
        """The reasoning item id an ``encrypted_content`` was issued for (None if never).

        Args:
            encrypted_content: a reasoning item's ``encrypted_content`` as a client sent it back.
        """
        return self._issuer.issued_item(encrypted_content)

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
            method=method,
            path=path,
            headers=headers,
            body=cast(dict[str, Any], body) if isinstance(body, dict) else {},
            raw=raw or b"",
        )
        with self._lock:
            self.requests.append(recorded)
        try:
            route = path.split("?", 1)[0].rstrip("/")
            if method != "POST" or route not in (CHAT_PATH, RESPONSES_PATH):
                raise APIErrorAnswer(404, f"Invalid URL ({method} {route})")
            authorization = headers.get("authorization", "")
            if not authorization.removeprefix("Bearer ").strip():
                raise APIErrorAnswer(401, MISSING_KEY, type="invalid_request_error")
            if raw is None:
                raise APIErrorAnswer(413, default_message(413), code="request_too_large")
            if parse_error is not None or not isinstance(body, dict):
                raise invalid_request(UNPARSABLE_BODY)
            payload = cast(dict[str, Any], body)
            if route == CHAT_PATH:
                return self._chat(payload, request_id)
            return self._responses(payload, request_id)
        except APIErrorAnswer as answer:
            return error_outcome(answer, request_id)
        except Exception as exc:
            with self._lock:
                self.errors.append(exc)
            answer = APIErrorAnswer(500, f"OpenAISimulator internal error: {exc!r}")
            return error_outcome(answer, request_id)

    def _number(self) -> int:
        with self._lock:
            self._posts += 1
            return self._posts

    def _created(self) -> int:
        return EPOCH + int(self.clock.now())

    def _ttl(self, body: Mapping[str, Any]) -> float:
        return EXTENDED_TTL if body.get("prompt_cache_retention") == "24h" else self.cache_ttl

    def _chat(self, body: dict[str, Any], request_id: str) -> Outcome:
        number = self._number()
        fault = self._script.pop_fault()
        if fault is not None:
            return fault_outcome(fault, request_id)
        request = validate_chat(body, reasoning_model=self.reasoning_model)
        plan = self.cache.plan(
            chat_prompt(body),
            model=request.model,
            cache_key=_key(body),
            ttl=self._ttl(body),
        )
        resolved = self._next_reply(body, CHAT_PATH, number)
        if isinstance(resolved, SimFault):
            return fault_outcome(resolved, request_id)
        reply, fault_spec = _split(resolved)
        if reply.error_code is not None and reply.responses_status()[0] == "failed":
            status = status_for_code(reply.error_code)
            raise APIErrorAnswer(
                status,
                reply.error_message or default_message(status, reply.error_code),
                type=default_type(status, reply.error_code),
                code=reply.error_code,
            )
        if reply.delay:
            time.sleep(reply.delay)
        self.cache.commit(plan)
        calls = [
            ResolvedCall(
                id=c.call_id or self._issuer.call_id(), name=c.name, arguments=c.arguments_json()
            )
            for c in reply.tool_calls
        ]
        completion = render_completion(
            request=request,
            completion_id=self._issuer.completion_id(),
            created=self._created(),
            text=reply.text,
            refusal=reply.refusal,
            calls=calls,
            finish_reason=reply.chat_finish_reason(),
            usage=usage_for(reply, plan),
        )
        if request.stream:
            frames = completion_chunks(completion, request=request, issuer=self._issuer)
            return stream_outcome(frames, fault_spec, request_id, reply.event_delay, "chat")
        return complete_outcome(completion, fault_spec, request_id)

    def _responses(self, body: dict[str, Any], request_id: str) -> Outcome:
        number = self._number()
        fault = self._script.pop_fault()
        if fault is not None:
            return fault_outcome(fault, request_id)
        request = validate_responses(
            body,
            previous=self._previous,
            stored_item=self._stored_item,
            issued_item=self._issuer.issued_item,
        )
        plan = self.cache.plan(
            responses_prompt(request.tools, request.instructions, request.items),
            model=request.model,
            cache_key=_key(body),
            ttl=self._ttl(body),
        )
        resolved = self._next_reply(body, RESPONSES_PATH, number)
        if isinstance(resolved, SimFault):
            return fault_outcome(resolved, request_id)
        reply, fault_spec = _split(resolved)
        if reply.delay:
            time.sleep(reply.delay)
        self.cache.commit(plan)
        status, reason = reply.responses_status()
        output = build_output(reply, request=request, issuer=self._issuer, status=status)
        error: dict[str, Any] | None = None
        if status == "failed":
            code = reply.error_code or "server_error"
            error = {
                "code": code,
                "message": reply.error_message or default_message(status_for_code(code), code),
            }
        response = render_response(
            request=request,
            response_id=self._issuer.response_id(),
            created=self._created(),
            output=output,
            status=status,
            incomplete_reason=reason,
            error=error,
            usage=usage_for(reply, plan),
        )
        if request.store:
            with self._lock:
                self._stored_responses[response["id"]] = [*request.items, *output]
                for item in output:
                    self._stored_items[str(item["id"])] = item
        if request.stream:
            frames = response_events(response, request=request, issuer=self._issuer)
            return stream_outcome(frames, fault_spec, request_id, reply.event_delay, "responses")
        return complete_outcome(response, fault_spec, request_id)

    def _previous(self, response_id: str) -> list[dict[str, Any]] | None:
        with self._lock:
            found = self._stored_responses.get(response_id)
            return json.loads(json.dumps(found)) if found is not None else None

    def _stored_item(self, item_id: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._stored_items.get(item_id)
            return json.loads(json.dumps(found)) if found is not None else None

    def _next_reply(self, body: dict[str, Any], path: str, number: int) -> Reply:
        item = self._script.pop()
        if item is None:
            item = self.fallback
        if item is None:
            raise APIErrorAnswer(
                500,
                f"OpenAISimulator: the reply script is exhausted (POST {path}, request "
                f"#{number}, has no scripted reply); add replies with sim.add(...).",
                headers={"x-should-retry": "false"},
            )
        try:
            # Callables are user code: check what they return at run time.
            copy = json.loads(json.dumps(body))
            resolved = cast(object, item(copy) if callable(item) else item)
            if not isinstance(resolved, _REPLY_TYPES):
                raise TypeError(f"a script item must be a reply or a fault, not {resolved!r}")
        except Exception as exc:
            with self._lock:
                self.errors.append(exc)
            raise APIErrorAnswer(
                500,
                f"OpenAISimulator: the scripted reply failed: {exc!r}",
                headers={"x-should-retry": "false"},
            ) from exc
        return resolved


def _key(body: Mapping[str, Any]) -> str | None:
    key = body.get("prompt_cache_key")
    return str(key) if key is not None else None


def _split(resolved: Reply) -> tuple[SimReply, StreamFault | None]:
    """The reply to render and the stream fault around it (a fault's own reply or a default)."""
    if isinstance(resolved, str):
        return _script.text(resolved), None
    if isinstance(resolved, SimReply):
        return resolved, None
    assert not isinstance(resolved, SimFault)
    return resolved.reply or _DEFAULT_PARTIAL, resolved


@contextmanager
def simulator(
    *,
    clock: SimClock | None = None,
    fallback: ScriptItem | None = None,
    reasoning_model: Callable[[str], bool] = is_reasoning_model,
    cache_ttl: float = IN_MEMORY_TTL,
    assert_consumed: bool = False,
) -> Generator[OpenAISimulator]:
    """A running :class:`OpenAISimulator` for a ``with`` block or a pytest fixture.

    ``assert_consumed`` checks on a clean exit that every scripted reply was requested::

        @pytest.fixture
        def sim():
            with simulator(assert_consumed=True) as s:
                yield s

    Args:
        clock: the cache's clock and the source of ``created`` timestamps (default: a manual
            :class:`SimClock` at 0).
        fallback: the reply used when the script is empty (default: a 500 saying so).
        reasoning_model: which models reject ``max_tokens`` (default: names starting with
            ``o<digit>`` or ``gpt-5``).
        cache_ttl: seconds an in-memory prompt-cache entry lives after its last use.
        assert_consumed: on a clean exit, check that every scripted reply was requested.
    """
    sim = OpenAISimulator(
        clock=clock, fallback=fallback, reasoning_model=reasoning_model, cache_ttl=cache_ttl
    )
    with sim:
        yield sim
        if assert_consumed:
            sim.assert_consumed()
