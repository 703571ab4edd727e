"""Elicitation as a suspension: a server's question becomes ``Suspend``, the answer a re-send.

Nothing waits in memory. When a server asks for input the call returns
``Suspend(..., call_again=True)`` carrying everything the re-send needs in the pending call's
metadata (JSON, so it survives a process restart in the session store); resuming with the
answer (``run(tool_results={call_id: answer})``) calls the tool again, and the call is sent
again with it:

- **2026-07-28 input-required result.** The server returned the questions
  (``input_requests``) and an opaque ``request_state``; the re-send carries the answers
  under the same keys and the state, verbatim.
- **The older elicitation request** (a 2025-era connection). The server asked mid-call; the
  client stops that call (it is cancelled, never answered in memory) and suspends. The
  re-send runs the tool again, and when the server asks the same question (same message
  and schema) the stored answer is given at once; a new question suspends again.
- **URL elicitation** (an ``elicitation/create`` in URL mode, or the 2025-era
  ``URLElicitationRequired`` error) suspends with ``reason="auth_required"``; the answer
  only says the person went there (any value but a decline), and the call is sent again.

The metadata of a pending call (``type: "mcp_elicitation"``): ``server``, ``tool``, ``mode``
(``form`` or ``url``), ``message``, ``requested_schema`` (form) or ``url``, ``requests`` (every
question by key), ``protocol`` (``input_required``, ``elicitation_request`` or
``url_required``), ``request_state`` and ``answered`` (earlier answers, older request only).

An answer is the form's content (``{"people": 4}``), or ``{"action": "decline"}`` /
``{"action": "cancel"}`` (``{"action": "accept", "content": {...}}`` also works); a
``ToolApproval`` approves or declines. With several questions at once, the answer maps each
key of ``requests`` to its answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from mcp import types
from pydantic import ValidationError

from dive.messages import JSONValue
from dive.tools import Suspend, SuspendReason

__all__ = [
    "ELICITATION",
    "AnswerError",
    "elicit_result",
    "from_input_required",
    "from_request",
    "from_url_required",
    "input_responses",
    "params_json",
]

ELICITATION = "mcp_elicitation"
Protocol = Literal["input_required", "elicitation_request", "url_required"]


class AnswerError(ValueError):
    """A supplied answer that does not fit the question."""


def params_json(params: types.ElicitRequestParams) -> dict[str, Any]:
    """An elicitation's parameters as JSON (without ``_meta``), the form questions compare in."""
    data = params.model_dump(by_alias=True, mode="json", exclude_none=True)
    data.pop("_meta", None)
    data.pop("task", None)
    return data


def _suspend(
    server: str,
    tool: str,
    requests: Mapping[str, dict[str, Any]],
    protocol: Protocol,
    **extra: JSONValue,
) -> Suspend:
    first = next(iter(requests.values()))
    modes = {r.get("mode", "form") for r in requests.values()}
    reason: SuspendReason = "auth_required" if modes == {"url"} else "input_required"
    message = "\n".join(str(r.get("message", "")) for r in requests.values())
    meta: dict[str, JSONValue] = {
        "type": ELICITATION,
        "server": server,
        "tool": tool,
        "mode": str(first.get("mode", "form")),
        "message": message,
        "requests": cast(JSONValue, dict(requests)),
        "protocol": protocol,
    }
    if "requestedSchema" in first:
        meta["requested_schema"] = first["requestedSchema"]
    if "url" in first:
        meta["url"] = first["url"]
    meta.update(extra)
    return Suspend(message, reason=reason, metadata=meta, call_again=True)


def from_input_required(server: str, tool: str, result: types.InputRequiredResult) -> Suspend | str:
    """The suspension an input-required result asks for, or why dive cannot answer it."""
    requests: dict[str, dict[str, Any]] = {}
    for key, request in (result.input_requests or {}).items():
        if not isinstance(request, types.ElicitRequest):
            kind = "sampling" if isinstance(request, types.CreateMessageRequest) else "roots"
            return (
                f'MCP server "{server}" asked the client for {kind} ({request.method}) to '
                f'finish "{tool}"; dive answers only elicitations, so the call was not finished'
            )
        requests[key] = params_json(request.params)
    extra: dict[str, JSONValue] = {}
    if result.request_state is not None:
        extra["request_state"] = result.request_state
    return _suspend(server, tool, requests, "input_required", **extra)


def from_request(
    server: str,
    tool: str,
    request: dict[str, Any],
    answered: Sequence[JSONValue],
) -> Suspend:
    """The suspension an older, mid-call elicitation request asks for."""
    return _suspend(
        server,
        tool,
        {"elicitation": request},
        "elicitation_request",
        answered=list(answered),
    )


def from_url_required(server: str, tool: str, data: object) -> Suspend | None:
    """The suspension a 2025-era ``URLElicitationRequired`` error asks for (None: malformed)."""
    try:
        parsed = types.ElicitationRequiredErrorData.model_validate(data)
    except ValidationError:
        return None
    if not parsed.elicitations:
        return None
    requests = {f"url{i}": params_json(e) for i, e in enumerate(parsed.elicitations)}
    return _suspend(server, tool, requests, "url_required")


def _approval(answer: Mapping[str, Any]) -> bool | None:
    if set(answer) == {"approved", "message"} and isinstance(answer["approved"], bool):
        return bool(answer["approved"])
    return None


def elicit_result(answer: JSONValue, mode: str) -> types.ElicitResult:
    """A supplied answer as the ``ElicitResult`` the server reads.

    Raises:
        AnswerError: the answer cannot be an answer to this question.
    """
    if isinstance(answer, str) and answer in ("decline", "cancel"):
        return types.ElicitResult(action=answer)
    if isinstance(answer, Mapping):
        given = cast("Mapping[str, Any]", answer)
        action = given.get("action")
        approved = _approval(given)
        if approved is not None:
            return types.ElicitResult(action="accept" if approved else "decline")
        if action in ("accept", "decline", "cancel") and set(given) <= {"action", "content"}:
            content = given.get("content") if action == "accept" and mode == "form" else None
            return _checked(action, content)
        if mode == "url":
            return types.ElicitResult(action="accept")
        return _checked("accept", dict(given))
    if mode == "url":
        return types.ElicitResult(action="accept")
    raise AnswerError(
        f"the answer must be a JSON object of the form's fields, or {{'action': 'decline'}}; "
        f"got {answer!r}"
    )


def _checked(action: Any, content: Any) -> types.ElicitResult:
    try:
        return types.ElicitResult(action=action, content=content)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise AnswerError(
            f"an elicitation answer holds flat strings, numbers, booleans or string lists "
            f"({problems})"
        ) from None


def input_responses(
    metadata: Mapping[str, JSONValue], answer: JSONValue
) -> dict[str, types.ElicitResult]:
    """The ``input_responses`` of the re-sent call: each question's key and its answer.

    Raises:
        AnswerError: the answer does not answer every question.
    """
    requests = cast("Mapping[str, Mapping[str, Any]]", metadata.get("requests") or {})
    if len(requests) == 1:
        [(key, request)] = requests.items()
        return {key: elicit_result(answer, str(request.get("mode", "form")))}
    if not isinstance(answer, Mapping) or not set(requests) <= set(answer):
        raise AnswerError(
            f"the server asked {len(requests)} questions at once: answer with an object "
            f"mapping each of {', '.join(sorted(requests))} to its answer"
        )
    given = cast("Mapping[str, JSONValue]", answer)
    return {
        key: elicit_result(given[key], str(request.get("mode", "form")))
        for key, request in requests.items()
    }
