"""One tool call to an MCP server: sent once, its answer made a dive output.

What a call can come back with, and what the model (or the person) gets:

- a ``CallToolResult``: its content as dive blocks, ``structuredContent`` kept, ``isError``
  an error result;
- a 2026-07-28 input-required result, or an older elicitation request mid-call, or a
  ``URLElicitationRequired`` error: a suspension (see ``_elicit``); a result that carries only
  ``request_state`` (the server says "not yet") is asked again a few times in process;
- a protocol error: an error result naming the server, the tool and the server's message;
- a lost connection (a stdio process that died, an HTTP server gone): an error result that
  says so and that the call may have taken effect. The call is never sent again by dive; the
  connection it ran on is dropped, and the next use opens a new one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from mcp import MCPError, types
from mcp.shared.dispatcher import ProgressFnT

from dive.mcp._connection import Connection, exception_text
from dive.mcp._content import to_tool_return
from dive.mcp._elicit import (
    ELICITATION,
    AnswerError,
    elicit_result,
    from_input_required,
    from_request,
    from_url_required,
    input_responses,
)
from dive.messages import JSONValue
from dive.tools import ResumedCall, Suspend, ToolContext, ToolOutput, ToolReturn

__all__ = ["CallSlot", "CallSpec", "ConnectionLost", "call_tool", "lost_text"]

_STATE_ONLY_ROUNDS = 10
_STATE_ONLY_DELAY = 0.05


class ConnectionLost(Exception):
    """The connection died under a call (the caller drops it)."""


@dataclass(eq=False)
class CallSlot:
    """A call in flight, where an older mid-call elicitation request finds its answers."""

    generation: int
    answers: list[tuple[dict[str, Any], types.ElicitResult]] = field(
        default_factory=list[tuple[dict[str, Any], types.ElicitResult]]
    )
    task: asyncio.Future[Any] | None = None
    asked: dict[str, Any] | None = None

    def take(self, request: dict[str, Any]) -> types.ElicitResult | None:
        """The stored answer to ``request`` (each is given once, in order), or None."""
        for i, (asked, answer) in enumerate(self.answers):
            if asked == request:
                del self.answers[i]
                return answer
        return None

    def ask(self, request: dict[str, Any]) -> None:
        """The server asked something unanswered: stop the call, it suspends."""
        self.asked = request
        if self.task is not None:
            self.task.cancel()


@dataclass(frozen=True, slots=True)
class CallSpec:
    """What one call sends."""

    server: str
    tool: str
    arguments: dict[str, Any]
    ctx: ToolContext[Any]


def _is_lost(exc: BaseException) -> bool:
    if isinstance(exc, MCPError):
        return exc.code == types.CONNECTION_CLOSED
    if isinstance(exc, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", exc)
        return any(_is_lost(e) for e in group.exceptions)
    # a transport failure (OSError, a broken stream, an HTTP error); a value the server sent
    # that does not parse (ValueError, TypeError) is the server's answer, not a lost link
    return isinstance(exc, Exception) and not isinstance(exc, ValueError | TypeError)


def _progress(spec: CallSpec) -> ProgressFnT:
    async def report(progress: float, total: float | None, message: str | None) -> None:
        display = message or (f"{progress:g}/{total:g}" if total else f"{progress:g}")
        meta: dict[str, JSONValue] = {"progress": progress, "server": spec.server}
        if total is not None:
            meta["total"] = total
        await spec.ctx.report_progress(display, meta)

    return report


def _resumed(spec: CallSpec) -> ResumedCall | None:
    seen = spec.ctx.resumed
    if seen is None or seen.metadata.get("type") != ELICITATION:
        return None
    return seen


def _legacy_answers(seen: ResumedCall) -> list[tuple[dict[str, Any], types.ElicitResult]]:
    meta = seen.metadata
    answers: list[tuple[dict[str, Any], types.ElicitResult]] = []
    for item in cast("list[Mapping[str, Any]]", meta.get("answered") or []):
        answers.append(
            (dict(item["request"]), types.ElicitResult.model_validate(dict(item["answer"])))
        )
    requests = cast("Mapping[str, Mapping[str, Any]]", meta.get("requests") or {})
    request = dict(requests.get("elicitation") or {})
    answers.append((request, elicit_result(seen.answer, str(request.get("mode", "form")))))
    return answers


def _answered_json(slot_answers: list[tuple[dict[str, Any], types.ElicitResult]]) -> list[Any]:
    return [
        {"request": req, "answer": res.model_dump(by_alias=True, mode="json", exclude_none=True)}
        for req, res in slot_answers
    ]


async def _send(
    conn: Connection, spec: CallSpec, slot: CallSlot, seed: dict[str, Any]
) -> types.CallToolResult | types.InputRequiredResult:
    session = conn.client.session
    task: asyncio.Future[types.CallToolResult | types.InputRequiredResult] = asyncio.ensure_future(
        session.call_tool(
            spec.tool,
            spec.arguments,
            progress_callback=_progress(spec),
            input_responses=seed.get("input_responses"),
            request_state=seed.get("request_state"),
            allow_input_required=True,
        )
    )
    slot.task = task
    try:
        await asyncio.wait({task})
    except asyncio.CancelledError:
        task.cancel()
        raise
    if slot.asked is not None:
        raise _Asked()
    return task.result()


class _Asked(Exception):
    """An older elicitation request stopped the call."""


def _error(text: str) -> ToolReturn:
    return ToolReturn(content=text, is_error=True)


async def call_tool(conn: Connection, spec: CallSpec, slot: CallSlot) -> ToolOutput:
    """Send one call on ``conn``; the dive output it comes to.

    Raises:
        ConnectionLost: the connection died during the call (it was not sent again).
    """
    seen = _resumed(spec)
    seed: dict[str, Any] = {}
    if seen is not None:
        try:
            if seen.metadata.get("protocol") == "input_required":
                seed["input_responses"] = input_responses(seen.metadata, seen.answer)
                if isinstance(state := seen.metadata.get("request_state"), str):
                    seed["request_state"] = state
            elif seen.metadata.get("protocol") == "elicitation_request":
                slot.answers = _legacy_answers(seen)
        except AnswerError as exc:
            return _error(
                f'The answer to MCP server "{spec.server}"\'s question for "{spec.tool}" does '
                f"not fit: {exc}. Call the tool again to be asked again.",
            )
    given = list(slot.answers)
    for _round in range(_STATE_ONLY_ROUNDS):
        try:
            result = await _send(conn, spec, slot, seed)
        except _Asked:
            assert slot.asked is not None
            used = [a for a in given if a not in slot.answers]
            return from_request(spec.server, spec.tool, slot.asked, _answered_json(used))
        except asyncio.CancelledError:
            raise
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                raise ConnectionLost(exception_text(exc)) from exc
            return _refused(spec, exc, resumed=bool(seed.get("request_state")))
        except Exception as exc:
            if _is_lost(exc):
                raise ConnectionLost(exception_text(exc)) from exc
            return _error(
                f'MCP server "{spec.server}" answered the call to "{spec.tool}" with something '
                f"dive could not read: {exception_text(exc)}",
            )
        if isinstance(result, types.CallToolResult):
            return to_tool_return(result)
        if result.input_requests:
            asked = from_input_required(spec.server, spec.tool, result)
            return asked if isinstance(asked, Suspend) else _error(asked)
        seed = {"request_state": result.request_state}  # "not yet": ask again shortly
        await asyncio.sleep(_STATE_ONLY_DELAY * (2**_round))
    return _error(
        f'MCP server "{spec.server}" kept answering "{spec.tool}" with "not finished yet" '
        f"{_STATE_ONLY_ROUNDS} times; dive stopped asking. Call the tool again later.",
    )


def _refused(spec: CallSpec, exc: MCPError, *, resumed: bool) -> ToolOutput:
    if exc.code == types.URL_ELICITATION_REQUIRED:
        suspend = from_url_required(spec.server, spec.tool, exc.error.data)
        if suspend is not None:
            return suspend
    if resumed and exc.code == types.INVALID_PARAMS:
        return _error(
            f'MCP server "{spec.server}" no longer accepts the answer for "{spec.tool}" '
            f"({exc.error.message}): its saved state expired or the server restarted without "
            "its key. Call the tool again to start over.",
        )
    return _error(
        f'MCP server "{spec.server}" refused the call to "{spec.tool}": '
        f"{exc.error.message} (MCP error {exc.code}).",
    )


def lost_text(server: str, tool: str, reason: str) -> str:
    """The error result of a call whose connection died under it."""
    return (
        f'MCP server "{server}" was lost during the call to "{tool}" ({reason}). The call may '
        "have taken effect; dive did not send it again, and reconnects on the next call."
    )
