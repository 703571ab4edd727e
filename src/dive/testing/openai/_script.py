"""The reply script: what the simulated model answers, and the faults it injects.

One script serves both endpoints (``/v1/chat/completions`` and ``/v1/responses``): each request
that passes validation takes the next item, whichever endpoint it went to, and the item is
rendered in that endpoint's shape.

- :class:`SimReply` — an endpoint-neutral model turn: ``text``, ``refusal``, parallel
  ``tool_calls`` (:class:`ToolCall`), ``reasoning`` items (:class:`Reasoning`), how it ended
  (``finish_reason`` for Chat, ``status`` / ``incomplete_reason`` / ``error_code`` for
  Responses, each derived from the other when not given) and usage overrides.
- a plain ``str`` — a text reply.
- :class:`SimFault` — an HTTP error status. A fault at the head of the script is answered
  before validation, like an edge error, so even an invalid request gets it.
- :class:`SimStreamError` — a 200 stream that sends N events, then an error payload.
- :class:`SimCut` — the connection drops after N events.
- :class:`SimMalformed` — invalid JSON: the whole body, or the data of event N+1.
- :class:`SimTruncated` — a stream that ends cleanly but early: no ``finish_reason`` chunk and
  no ``[DONE]`` (Chat), no terminal event (Responses).
- a callable taking the request body (a dict) and returning any of the above.

Requests rejected with a 400 consume nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dive.testing._script_queue import ScriptQueue

__all__ = [
    "Reasoning",
    "Reply",
    "Script",
    "ScriptItem",
    "SimCut",
    "SimFault",
    "SimMalformed",
    "SimReply",
    "SimStreamError",
    "SimTruncated",
    "ToolCall",
    "call",
    "reasoning",
    "refusal",
    "reply",
    "text",
    "tool_call",
    "tool_calls",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One function call of a reply.

    Attributes:
        name: the function name.
        arguments: a mapping (JSON-encoded when served) or a string sent verbatim (which need
            not be valid JSON).
        call_id: the call id (``call_…``, generated when None); Chat's ``tool_calls[].id``,
            Responses' ``call_id``.
        id: the Responses item id (``fc_…``, generated when None).
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict[str, Any])
    call_id: str | None = None
    id: str | None = None

    def arguments_json(self) -> str:
        """The arguments as the JSON string the wire carries."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments), ensure_ascii=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Reasoning:
    """A reasoning item (Responses); in Chat it only counts as ``reasoning_tokens``.

    Attributes:
        summary: summary texts (``summary_text`` parts).
        content: raw reasoning texts (``reasoning_text`` parts).
        encrypted_content: sent when the request's ``include`` has
            ``"reasoning.encrypted_content"``; generated when None. Either way the simulator
            remembers it and accepts it back only unchanged.
        id: the item id (``rs_…``, generated when None).
    """

    summary: Sequence[str] = ()
    content: Sequence[str] = ()
    encrypted_content: str | None = None
    id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimReply:
    """A scripted model turn, rendered for whichever endpoint asked.

    Responses output items come in this order: reasoning items, one message (``text`` as
    ``output_text``, or ``refusal``), then the function calls.

    Attributes:
        text: the assistant text (None for none).
        refusal: a refusal message (Chat ``message.refusal``; a Responses ``refusal`` part).
        tool_calls: parallel function calls.
        reasoning: reasoning items.
        finish_reason: Chat's ``finish_reason``; by default ``length`` / ``content_filter`` for
            the matching ``incomplete_reason``, else ``tool_calls`` when there are calls, else
            ``stop``.
        status: Responses' ``status``; by default ``failed`` with ``error_code``,
            ``incomplete`` with ``incomplete_reason`` (or a ``length`` / ``content_filter``
            finish reason), else ``completed``.
        incomplete_reason: ``max_output_tokens`` or ``content_filter``.
        error_code: a failed response's ``error.code`` (``server_error``,
            ``rate_limit_exceeded``, ``invalid_prompt``, …). A Chat request answers the
            matching HTTP error instead (429 for rate limits, 400 for ``invalid_prompt``,
            else 500).
        error_message: a failed response's ``error.message``.
        input_tokens: replaces the computed prompt tokens (which include cached ones).
        output_tokens: replaces the computed output tokens (which include reasoning ones).
        cached_tokens: replaces the simulated cache hit.
        reasoning_tokens: replaces the computed reasoning tokens.
        usage: keys merged last into the endpoint's usage object (shallow).
        delay: seconds to wait before the response starts (the cache publishes after it).
        event_delay: seconds to wait before each streamed event.
    """

    text: str | None = None
    refusal: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    reasoning: Sequence[Reasoning] = ()
    finish_reason: str | None = None
    status: str | None = None
    incomplete_reason: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    usage: Mapping[str, Any] | None = None
    delay: float = 0.0
    event_delay: float = 0.0

    def chat_finish_reason(self) -> str:
        """The Chat ``finish_reason`` of this reply."""
        if self.finish_reason is not None:
            return self.finish_reason
        if self.incomplete_reason == "max_output_tokens":
            return "length"
        if self.incomplete_reason == "content_filter":
            return "content_filter"
        return "tool_calls" if self.tool_calls else "stop"

    def responses_status(self) -> tuple[str, str | None]:
        """The Responses ``status`` and ``incomplete_details.reason`` of this reply."""
        reason = self.incomplete_reason
        if reason is None and self.finish_reason == "length":
            reason = "max_output_tokens"
        elif reason is None and self.finish_reason == "content_filter":
            reason = "content_filter"
        status = self.status
        if status is None:
            if self.error_code is not None:
                status = "failed"
            elif reason is not None:
                status = "incomplete"
            else:
                status = "completed"
        if status == "incomplete" and reason is None:
            reason = "max_output_tokens"
        return status, reason if status == "incomplete" else None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimFault:
    """An HTTP error answer.

    Attributes:
        status: the HTTP status (429, 500, 503, …).
        code: ``error.code``; ``rate_limit_exceeded`` for 429 and ``invalid_api_key`` for 401
            when None (use ``insufficient_quota`` for a spent quota).
        type: ``error.type``; derived from status and code when None.
        message: ``error.message``; a plausible default when None.
        param: ``error.param``.
        retry_after: the ``retry-after`` header (seconds, or an HTTP date string).
        retry_after_ms: the ``retry-after-ms`` header.
        should_retry: the ``x-should-retry`` header (absent when None).
        headers: extra response headers.
    """

    status: int = 429
    code: str | None = None
    type: str | None = None
    message: str | None = None
    param: str | None = None
    retry_after: float | str | None = None
    retry_after_ms: float | None = None
    should_retry: bool | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])


@dataclass(frozen=True, slots=True, kw_only=True)
class SimStreamError:
    """A 200 stream that sends ``after_events`` events of ``reply``, then an error payload.

    Chat gets ``data: {"error": {…}}``; Responses gets ``event: error`` with ``code``,
    ``message`` and ``param`` at the top level (as documented) and the same fields nested under
    ``error`` (as the live API sends them, which makes the SDK raise). A non-streaming request
    gets the matching HTTP error (see :func:`~dive.testing.openai._errors.status_for_code`).

    Attributes:
        after_events: events of ``reply`` sent before the error.
        code: the error's ``code`` (``server_error``, ``rate_limit_exceeded``, ...), or None.
        type: the error's ``type``.
        message: the error's message; None: a plausible default.
        reply: the reply whose first events are sent; None: a short text reply.
    """

    after_events: int = 1
    code: str | None = "server_error"
    type: str = "server_error"
    message: str | None = None
    reply: SimReply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimCut:
    """The connection drops after ``after_events`` events of ``reply``.

    A non-streaming request gets its headers and half of its body, then the drop.

    Attributes:
        after_events: events of ``reply`` sent before the connection drops.
        reply: the reply whose first events are sent; None: a short text reply.
    """

    after_events: int = 1
    reply: SimReply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimMalformed:
    """Invalid JSON: the body of a non-streaming response, or the data of event N+1 of a stream.

    Attributes:
        after_events: events of ``reply`` sent before the invalid one (0: the first is invalid).
        reply: the reply whose first events are sent; None: a short text reply.
    """

    after_events: int = 0
    reply: SimReply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimTruncated:
    """A stream that ends cleanly before its end.

    The HTTP body completes normally, but Chat sends no ``finish_reason`` chunk, no usage
    chunk and no ``[DONE]``, and Responses sends no terminal event. ``after_events`` limits
    it further (None: every event before the end).

    A non-streaming request is answered like :class:`SimCut` (sim choice).

    Attributes:
        after_events: at most this many events; None: every event before the end.
        reply: the reply whose events are sent; None: a short text reply.
    """

    after_events: int | None = None
    reply: SimReply | None = None


Reply = SimReply | SimFault | SimStreamError | SimCut | SimMalformed | SimTruncated | str
ScriptItem = Reply | Callable[[dict[str, Any]], Reply]


def call(
    name: str,
    arguments: Mapping[str, Any] | str | None = None,
    *,
    call_id: str | None = None,
    id: str | None = None,
) -> ToolCall:
    """A function call (ids generated when served if None).

    Args:
        name: the function to call.
        arguments: a mapping (JSON-encoded when served) or a string sent verbatim.
        call_id: the call id (``call_…``); None: generated.
        id: the Responses item id (``fc_…``); None: generated.
    """
    return ToolCall(
        name=name, arguments=arguments if arguments is not None else {}, call_id=call_id, id=id
    )


def reasoning(
    *summary: str,
    content: Sequence[str] = (),
    encrypted_content: str | None = None,
    id: str | None = None,
) -> Reasoning:
    """A reasoning item with these summary texts.

    Args:
        summary: the summary texts.
        content: raw reasoning texts.
        encrypted_content: the encrypted content to serve; None: generated.
        id: the item id (``rs_…``); None: generated.
    """
    return Reasoning(
        summary=tuple(summary), content=tuple(content), encrypted_content=encrypted_content, id=id
    )


def text(text: str, **options: Any) -> SimReply:
    """A text reply (``options`` are other :class:`SimReply` fields).

    Args:
        text: the reply's text.
        options: other :class:`SimReply` fields.
    """
    return SimReply(text=text, **options)


def refusal(message: str, **options: Any) -> SimReply:
    """A refusal reply.

    Args:
        message: the refusal's text.
        options: other :class:`SimReply` fields.
    """
    return SimReply(refusal=message, **options)


def tool_call(
    name: str,
    arguments: Mapping[str, Any] | str | None = None,
    *,
    call_id: str | None = None,
    **options: Any,
) -> SimReply:
    """A reply calling one function.

    Args:
        name: the function to call.
        arguments: a mapping (JSON-encoded when served) or a string sent verbatim.
        call_id: the call id; None: generated.
        options: other :class:`SimReply` fields.
    """
    return SimReply(tool_calls=(call(name, arguments, call_id=call_id),), **options)


def tool_calls(*calls: ToolCall, **options: Any) -> SimReply:
    """A reply calling several functions in parallel (``text=…`` adds text before them).

    Args:
        calls: the calls, from :func:`call`.
        options: other :class:`SimReply` fields (``text``, ``reasoning``, ...).
    """
    return SimReply(tool_calls=tuple(calls), **options)


def reply(**fields: Any) -> SimReply:
    """A :class:`SimReply` (keyword fields).

    Args:
        fields: the :class:`SimReply` fields.
    """
    return SimReply(**fields)


class Script(ScriptQueue[ScriptItem, SimFault]):
    """A thread-safe queue of script items."""

    def __init__(self) -> None:
        super().__init__(SimFault)
