"""``TemporalRunner``: the loop's effects as activities, from inside the turn workflow.

The loop runs unchanged in the workflow (its decisions replay deterministically); each effect
it has goes through this runner. What an activity is sent is a reference and what is new:

- a model call sends the request *without* the messages the store already holds (the
  history before the turn, and the stored turn's messages at the revision named) and
  without what the worker's agent has (its static tool definitions and system prompt, named
  instead): the activity reads those back. The loop here never holds the session's history
  at all — a ``load`` hands it an empty one (an incomplete last turn counts as history) — so a
  workflow's history grows with the turn's steps, never with the conversation;
- a write sends the turn record as a patch of the stored one (the messages after the
  common prefix, the call records that changed); store operations are local activities
  (short, on the worker running the workflow task: no task-queue round trip);
- a tool call sends the call's id: its arguments are in the stored turn, written before
  any call starts. Its retries follow the tool's governance (see ``_policy``).

The clock, ids and sleeps are the workflow's (``workflow.now()``, ``workflow.uuid4()``,
timers), so a replay sees the same values.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Literal

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.workflow import ActivityCancellationType

from dive.agent import ModelCall, ToolOutcome, ToolTask
from dive.errors import DiveError
from dive.llm import ModelRequest, ModelResponse, ResponseAccumulator
from dive.messages import Message, ToolDefinition, ToolResult
from dive.messages.codec import decode, dumps, to_jsonable
from dive.sessions import Session, SessionSnapshot
from dive.temporal._names import Names
from dive.temporal._policy import MODEL_RETRY, STORE_RETRY, tool_retry, tool_timeout
from dive.temporal._results import error_of
from dive.temporal._wire import (
    ModelInput,
    ModelOutput,
    Ref,
    StoreInput,
    StoreOutput,
    ToolInput,
    ToolsetInput,
)
from dive.tools import Tool, ToolContext, ToolOutput, Toolset
from dive.turns import CallState, PendingToolCall, Turn

__all__ = ["RemoteTool", "TemporalRunner", "decode_outcome", "encode_outcome", "patch_of"]

_MODEL_TIMEOUT = timedelta(hours=1)
_STORE_TIMEOUT = timedelta(minutes=5)


class RemoteTool(Tool):
    """A toolset's tool as the workflow sees it: a definition; the call runs on a worker."""

    def __init__(self, definition: ToolDefinition, toolset: str) -> None:
        self.definition = definition
        self.toolset_name = toolset

    async def call(self, input: Any, ctx: ToolContext) -> ToolOutput:
        raise DiveError(f'tool "{self.name}" runs on a worker; only the runner calls it')


def encode_outcome(outcome: ToolOutcome) -> str:
    """A tool outcome as JSON (background work cannot cross: see the tool activity)."""
    data: dict[str, Any] = {"result": to_jsonable(outcome.result), "state": outcome.state}
    if outcome.error is not None:
        data["error"] = outcome.error
    if outcome.pending is not None:
        data["pending"] = to_jsonable(outcome.pending)
    if outcome.terminal:
        data["terminal"] = True
    return json.dumps(data, separators=(",", ":"))


def decode_outcome(text: str) -> ToolOutcome:
    """The tool outcome ``encode_outcome`` encoded."""
    data = json.loads(text)
    pending = data.get("pending")
    state: CallState = data["state"]
    return ToolOutcome(
        result=decode(ToolResult, data["result"]),
        state=state,
        error=data.get("error"),
        pending=decode(PendingToolCall, pending) if pending is not None else None,
        terminal=bool(data.get("terminal")),
    )


def _common_prefix(a: Sequence[Message], b: Sequence[Message]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x is not y and x != y:
            break
        n += 1
    return n


def patch_of(turn: Turn, base: Turn | None) -> str:
    """``turn`` as a patch of ``base`` (the stored open turn it replaces), as JSON."""
    same_turn = base is not None and base.id == turn.id
    keep = _common_prefix(turn.messages, base.messages) if base is not None and same_turn else 0
    old = {r.id: r for r in base.tool_calls} if base is not None and same_turn else {}
    calls = [r for r in turn.tool_calls if old.get(r.id) != r]
    suspension = turn.suspension
    same_messages = suspension is not None and suspension.turn_messages == turn.messages
    if suspension is not None and same_messages:
        suspension = replace(suspension, turn_messages=())
    bare = replace(turn, messages=(), tool_calls=(), suspension=suspension)
    patch = {
        "turn": json.loads(dumps(bare)),
        "keep": keep,
        "messages": [json.loads(dumps(m)) for m in turn.messages[keep:]],
        "calls": [json.loads(dumps(r)) for r in calls],
        "suspension_messages": same_messages,
    }
    return json.dumps(patch, separators=(",", ":"))


class TemporalRunner:
    """The runner the turn workflow hands the loop (see the module docstring)."""

    def __init__(
        self,
        names: Names,
        *,
        heartbeat: timedelta,
        deps_json: str | None,
        live_text: bool,
        static_tools: Sequence[ToolDefinition] = (),
        static_system: str | None = None,
    ) -> None:
        self._names = names
        self._static_tools = {d.name: d for d in static_tools}
        self._static_system = static_system
        self._heartbeat = heartbeat
        self._deps_json = deps_json
        self._live_text = live_text
        self.stored: Turn | None = None
        """The open turn as the store holds it (last loaded or written here)."""
        self.written: Turn | None = None
        """The turn as last written here."""
        self.revision = 0
        """The session revision of the last load or write."""
        self.running: dict[str, str] = {}
        """Tool calls whose activity runs now: id → tool name."""
        self.model_calls = 0

    def _ref(self, ref: Any) -> Ref:
        return Ref(
            session_id=ref.session_id or "",
            turn_id=ref.turn_id,
            revision=ref.revision,
            step=ref.step,
        )

    def _by_reference(self, request: ModelRequest) -> tuple[ModelRequest, tuple[str, ...], bool]:
        """The request without what the worker's agent has: static tools and system prompt."""
        static = self._static_tools
        lead = 0
        for d in request.tools:
            if static.get(d.name) != d:
                break
            lead += 1
        names = tuple(d.name for d in request.tools[:lead])
        same_system = request.system == self._static_system
        return (
            replace(
                request, tools=request.tools[lead:], system="" if same_system else request.system
            ),
            names,
            same_system,
        )

    async def _model(self, call: ModelCall, *, count_only: bool) -> ModelOutput:
        request = call.request
        stored = self.stored.messages if self.stored is not None else ()
        prefix = _common_prefix(request.messages, stored)
        rest, static_tools, static_system = self._by_reference(
            replace(request, messages=request.messages[prefix:])
        )
        self.model_calls += 0 if count_only else 1
        try:
            return await workflow.execute_activity(
                self._names.model,
                ModelInput(
                    ref=self._ref(call.ref),
                    prefix=prefix,
                    request_json=dumps(rest),
                    static_tools=static_tools,
                    static_system=static_system,
                    count_only=count_only,
                    live_text=self._live_text and not count_only,
                ),
                result_type=ModelOutput,
                start_to_close_timeout=_MODEL_TIMEOUT,
                heartbeat_timeout=self._heartbeat,
                retry_policy=MODEL_RETRY,
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            )
        except ActivityError as exc:
            raise DiveError(
                f"the model call could not be completed on any worker ({_cause(exc)})"
            ) from None

    async def call_model(
        self, call: ModelCall, into: ResponseAccumulator, deliver: Any
    ) -> ModelResponse:
        out = await self._model(call, count_only=False)
        if out.error_type is not None:
            raise error_of(out.error_type, out.error_message) or DiveError("the model call failed")
        assert out.response_json is not None
        return decode(ModelResponse, out.response_json)

    async def count_tokens(self, call: ModelCall) -> int:
        out = await self._model(call, count_only=True)
        if out.error_type is not None:
            raise error_of(out.error_type, out.error_message) or DiveError("counting failed")
        return out.tokens or 0

    async def call_tool(self, task: ToolTask) -> ToolOutcome:
        d = task.tool.definition
        resumed = task.context.resumed
        self.running[task.call.id] = task.call.name
        try:
            text = await workflow.execute_activity(
                self._names.tool,
                ToolInput(
                    ref=self._ref(task.ref),
                    call_id=task.call.id,
                    name=task.call.name,
                    toolset=task.tool.toolset_name if isinstance(task.tool, RemoteTool) else None,
                    deps_json=self._deps_json,
                    resumed_json=json.dumps(to_jsonable(resumed)) if resumed is not None else None,
                ),
                result_type=str,
                start_to_close_timeout=tool_timeout(d, self._heartbeat),
                heartbeat_timeout=self._heartbeat,
                retry_policy=tool_retry(d),
                cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            )
        except ActivityError as exc:
            repeatable = d.idempotent or d.read_only
            raise DiveError(
                f'tool call {task.call.id} ("{task.call.name}") was lost with its worker '
                f"({_cause(exc)}); "
                + (
                    "it was retried as often as its policy allows"
                    if repeatable
                    else "it is not idempotent, so it was not run again: check its effect"
                )
            ) from None
        finally:
            self.running.pop(task.call.id, None)
        return decode_outcome(text)

    async def list_tools(self, toolset: Toolset, context: ToolContext) -> Sequence[Tool]:
        text = await workflow.execute_activity(
            self._names.toolset,
            ToolsetInput(
                ref=Ref(
                    session_id=context.session_id or "", turn_id=context.turn_id, revision=0, step=0
                ),
                toolset=toolset.name,
                deps_json=self._deps_json,
            ),
            result_type=str,
            start_to_close_timeout=_STORE_TIMEOUT,
            heartbeat_timeout=self._heartbeat,
            retry_policy=STORE_RETRY,
        )
        return [RemoteTool(decode(ToolDefinition, d), toolset.name) for d in json.loads(text)]

    async def _store(self, inp: StoreInput) -> StoreOutput:
        try:
            return await workflow.execute_local_activity(
                self._names.store,
                inp,
                result_type=StoreOutput,
                start_to_close_timeout=_STORE_TIMEOUT,
                retry_policy=STORE_RETRY,
            )
        except ActivityError as exc:
            raise _store_error(exc) from None

    async def load(self, session: Session) -> SessionSnapshot:
        out = await self._store(StoreInput(op="load", session_id=session.id))
        assert out.json is not None
        snap = decode(SessionSnapshot, out.json)
        self.stored = snap.open_turn
        self.revision = snap.revision
        return snap

    async def load_turns(self, session: Session) -> list[Turn]:
        out = await self._store(StoreInput(op="load_turns", session_id=session.id))
        return [decode(Turn, t) for t in json.loads(out.json or "[]")]

    async def write(self, session: Session, turn: Turn, *, expected_revision: int) -> int:
        out = await self._store(
            StoreInput(
                op="write",
                session_id=session.id,
                expected_revision=expected_revision,
                patch_json=patch_of(turn, self.stored),
            )
        )
        self.stored = turn if turn.status in ("running", "suspended") else None
        self.written = turn
        self.revision = out.revision
        return out.revision

    async def _claim_op(
        self,
        op: Literal["claim", "renew_claim", "release_claim"],
        session: Session,
        owner: str,
        ttl: float,
    ) -> None:
        await self._store(StoreInput(op=op, session_id=session.id, owner=owner, ttl=ttl))

    async def claim(self, session: Session, owner: str, ttl: float) -> None:
        await self._claim_op("claim", session, owner, ttl)

    async def renew_claim(self, session: Session, owner: str, ttl: float) -> None:
        await self._claim_op("renew_claim", session, owner, ttl)

    async def release_claim(self, session: Session, owner: str) -> None:
        await self._claim_op("release_claim", session, owner, 0.0)

    def now(self) -> datetime:
        return workflow.now()

    def monotonic(self) -> float:
        return workflow.time()

    def new_turn_id(self) -> str:
        return "turn_" + workflow.uuid4().hex

    async def sleep(self, seconds: float) -> None:
        await workflow.sleep(seconds)


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__
    while cause is not None and cause.__cause__ is not None:
        cause = cause.__cause__
    return str(cause or exc)


def _store_error(exc: ActivityError) -> BaseException:
    cause: BaseException | None = exc.__cause__
    while cause is not None:
        if isinstance(cause, ApplicationError) and cause.type:
            return error_of(cause.type, cause.message) or exc
        cause = cause.__cause__
    return DiveError(f"the session store could not be reached from any worker ({_cause(exc)})")
