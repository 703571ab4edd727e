"""The activities of one ``TemporalAgent``: every effect of the loop, on a worker.

Each reads what it needs from the session store by reference (see ``_wire``) and heartbeats
every third of the heartbeat timeout while it works, so Temporal notices a dead worker within
``heartbeat_timeout`` and a cancel reaches a running activity (its task is cancelled).

- model: the request rebuilt from the store (history + the stored turn's first messages +
  what the workflow sent), called as in process (the provider's retry window; streamed, and
  its text sent to the workflow when live text is on); a provider failure is returned as
  data so that the loop classifies it.
- tool: the call found by id in the stored running turn, run by the in-process runner (its
  timeout and retry policy, failures as data).
- toolset: a toolset's tool definitions (listed here, never cached in workflow code).
- store: load (the history left out: the loop in the workflow never holds it), load_turns
  (usage and call records only), write (a patch of the stored open turn), claims.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import TypeAdapter
from temporalio import activity
from temporalio.exceptions import ApplicationError

from dive.agent import Agent, InProcessRunner, ModelCall, StepRef, ToolOutcome, ToolTask
from dive.errors import DiveError
from dive.llm import ModelRequest, ResponseAccumulator, StreamEvent
from dive.messages import Message, TextBlock, ToolCall, ToolResult
from dive.messages.codec import decode, dumps
from dive.sessions import SessionStore
from dive.temporal._names import Names
from dive.temporal._runner import encode_outcome
from dive.temporal._wire import (
    ModelInput,
    ModelOutput,
    Ref,
    StoreInput,
    StoreOutput,
    TextChunk,
    ToolInput,
    ToolsetInput,
)
from dive.tools import ResumedCall, Tool, ToolContext
from dive.turns import SuspensionState, ToolCallRecord, Turn

__all__ = ["Worker", "activities"]

log = logging.getLogger("dive.temporal")
_IN_PROCESS = InProcessRunner()


@dataclass(frozen=True, slots=True, kw_only=True)
class Worker:
    """What a worker's activities share: the agent, the store, the turns it last wrote."""

    agent: Agent[Any, Any]
    store: SessionStore
    max_payload_bytes: int
    written: OrderedDict[str, tuple[int, Turn]] = field(
        default_factory=OrderedDict[str, tuple[int, Turn]]
    )
    """Per session, the revision and turn this worker last wrote (a write patches it without
    reading the store back when the store is still at that revision)."""

    def remember(self, session_id: str, revision: int, turn: Turn) -> None:
        self.written[session_id] = (revision, turn)
        self.written.move_to_end(session_id)
        while len(self.written) > 1024:
            self.written.popitem(last=False)

    def deps(self, text: str | None) -> Any:
        """The run's ``deps``, validated as the agent's ``deps_type``."""
        if text is None:
            return None
        tp = self.agent.deps_type
        return TypeAdapter(Any if tp is None else tp).validate_json(text)


@contextlib.asynccontextmanager
async def _heartbeats() -> AsyncGenerator[None]:
    timeout = activity.info().heartbeat_timeout
    interval = max((timeout.total_seconds() if timeout else 30.0) / 3, 0.05)

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(interval)

    task = asyncio.ensure_future(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _fail(exc: BaseException) -> ApplicationError:
    """A dive error as a non-retryable activity failure the workflow turns back into it."""
    return ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True)


def _step_ref(ref: Ref) -> StepRef:
    return StepRef(
        session_id=ref.session_id, turn_id=ref.turn_id, revision=ref.revision, step=ref.step
    )


# --- model ------------------------------------------------------------------------------------


async def _request(w: Worker, inp: ModelInput) -> ModelRequest:
    snap = await w.store.load(inp.ref.session_id)
    turn = snap.open_turn
    rest = decode(ModelRequest, inp.request_json)
    stored: tuple[Message, ...] = ()
    if inp.prefix:
        if turn is None or turn.id != inp.ref.turn_id or snap.revision != inp.ref.revision:
            raise ApplicationError(
                f"turn {inp.ref.turn_id} is not at revision {inp.ref.revision} in the store",
                type="RevisionConflictError",
                non_retryable=True,
            )
        stored = turn.messages[: inp.prefix]
    history = snap.history
    if turn is not None and turn.status == "incomplete":
        history = (*history, *turn.messages)  # the loop saw it as history too
    own = {d.name: d for d in w.agent.tool_definitions}
    tools = (*(own[n] for n in inp.static_tools), *rest.tools)
    system = w.agent.system_prompt() if inp.static_system else rest.system
    return replace(rest, messages=(*history, *stored, *rest.messages), tools=tools, system=system)


class _TextSender:
    """Sends a model call's text deltas to its workflow, a few milliseconds' worth a signal."""

    def __init__(self, inp: ModelInput) -> None:
        info = activity.info()
        self._handle = activity.client().get_workflow_handle(info.workflow_id or "")
        self._step, self._attempt = inp.ref.step, info.attempt
        self._pending: list[str] = []
        self._task: asyncio.Task[None] | None = None

    async def deliver(self, event: StreamEvent) -> None:
        delta = getattr(event, "delta", None)
        text = getattr(delta, "text", None)
        if isinstance(text, str) and text:
            self._pending.append(text)
            if self._task is None:
                self._task = asyncio.ensure_future(self._flush(0.05))

    async def _flush(self, wait: float) -> None:
        await asyncio.sleep(wait)  # gather the deltas of the next few milliseconds
        text = "".join(self._pending)
        self._pending.clear()
        if text:
            chunk = TextChunk(step=self._step, attempt=self._attempt, text=text)
            with contextlib.suppress(Exception):  # best effort: the record is the store's
                await self._handle.signal("dive.text", chunk)
        if wait:
            self._task = None

    async def close(self) -> None:
        """Send what is left before the activity returns (the workflow may end right after)."""
        while self._task is not None:  # a batch on its way: let it arrive, in order
            await self._task
        await self._flush(0)


async def model_step(w: Worker, inp: ModelInput) -> ModelOutput:
    """One model call (or token count) of the turn; failures as data."""
    request = await _request(w, inp)
    call = ModelCall(ref=_step_ref(inp.ref), model=w.agent.model, request=request)
    sender = _TextSender(inp) if inp.live_text else None
    try:
        if inp.count_only:
            return ModelOutput(tokens=await _IN_PROCESS.count_tokens(call))
        acc = ResponseAccumulator(w.agent.model.name)
        deliver = sender.deliver if sender is not None else None
        try:
            response = await _IN_PROCESS.call_model(call, acc, deliver)
        finally:
            if sender is not None:
                await sender.close()
    except DiveError as exc:
        return ModelOutput(error_type=type(exc).__name__, error_message=str(exc))
    except Exception as exc:  # an SDK error a provider did not translate, a model's bug
        log.error("model call of turn %s raised", inp.ref.turn_id, exc_info=True)
        return ModelOutput(error_type=type(exc).__name__, error_message=str(exc) or repr(exc))
    return ModelOutput(response_json=dumps(response))


# --- tools ------------------------------------------------------------------------------------


async def _stored_call(w: Worker, inp: ToolInput) -> ToolCall:
    snap = await w.store.load(inp.ref.session_id)
    turn = snap.open_turn
    if turn is None or turn.id != inp.ref.turn_id:
        raise ApplicationError(
            f"turn {inp.ref.turn_id} is not open in session {inp.ref.session_id}",
            type="RevisionConflictError",
            non_retryable=True,
        )
    for m in reversed(turn.messages):
        for c in m.tool_calls:
            if c.id == inp.call_id:
                return c
    raise ApplicationError(
        f"call {inp.call_id} is not in the stored turn {inp.ref.turn_id}",
        type="RevisionConflictError",
        non_retryable=True,
    )


async def _find_tool(w: Worker, name: str, toolset: str | None, ctx: ToolContext) -> Tool | None:
    if toolset is None:
        return next((t for t in w.agent.tools if t.name == name), None)
    for ts in w.agent.toolsets:
        if ts.name == toolset:
            return next((t for t in await ts.tools(ctx) if t.name == name), None)
    return None


def _too_big(call: ToolCall, outcome: ToolOutcome, text: str, limit: int) -> ToolOutcome | None:
    size = len(text.encode())
    if size <= limit:
        return None
    message = (
        f'Tool "{call.name}" returned {size:,} bytes, over the {limit:,}-byte Temporal payload '
        "limit; the result was dropped. Ask for less (a range, a summary), or have the tool "
        "store large results and return a reference."
    )
    return replace(outcome, result=_error(call, message), error=message, pending=None)


def _error(call: ToolCall, text: str) -> ToolResult:
    return ToolResult(
        tool_call_id=call.id, name=call.name, content=(TextBlock(text=text),), is_error=True
    )


async def tool_step(w: Worker, inp: ToolInput) -> str:
    """One tool call, read from the stored turn; its outcome as JSON."""
    call = await _stored_call(w, inp)
    resumed = decode(ResumedCall, json.loads(inp.resumed_json)) if inp.resumed_json else None
    ctx = ToolContext(
        tool_call_id=call.id,
        tool_name=call.name,
        turn_id=inp.ref.turn_id,
        session_id=inp.ref.session_id,
        agent_name=w.agent.name,
        deps=w.deps(inp.deps_json),
        agent=w.agent,
        resumed=resumed,
    )
    tool = await _find_tool(w, call.name, inp.toolset, ctx)
    if tool is None:
        raise _fail(DiveError(f'tool "{call.name}" is not on this worker\'s agent'))
    value, problem = tool.validate(call.arguments)
    if problem is not None:
        raise _fail(DiveError(problem))
    task = ToolTask(ref=_step_ref(inp.ref), tool=tool, call=call, input=value, context=ctx, log=log)
    outcome = await _IN_PROCESS.call_tool(task)
    if outcome.background is not None:
        outcome.background.stop("a Temporal activity cannot keep it running")
        text = (
            f'Tool "{call.name}" returned Background(...), which a Temporal activity cannot keep '
            "running after it returns; return the result, or start a workflow of your own."
        )
        outcome = ToolOutcome(result=_error(call, text), error=text)
    encoded = encode_outcome(outcome)
    smaller = _too_big(call, outcome, encoded, w.max_payload_bytes)
    return encoded if smaller is None else encode_outcome(smaller)


async def toolset_step(w: Worker, inp: ToolsetInput) -> str:
    """The definitions of one toolset's tools, listed on this worker."""
    ctx = ToolContext(
        tool_call_id="",
        tool_name="",
        turn_id=inp.ref.turn_id,
        session_id=inp.ref.session_id or None,
        agent_name=w.agent.name,
        deps=w.deps(inp.deps_json),
        agent=w.agent,
    )
    for ts in w.agent.toolsets:
        if ts.name == inp.toolset:
            tools = await ts.tools(ctx)
            return json.dumps([json.loads(dumps(t.definition)) for t in tools])
    raise _fail(DiveError(f"toolset {inp.toolset!r} is not on this worker's agent"))


# --- store ------------------------------------------------------------------------------------


def _apply(patch: dict[str, Any], base: Turn | None) -> Turn:
    bare = decode(Turn, patch["turn"])
    keep = int(patch["keep"])
    kept = base.messages[:keep] if base is not None and base.id == bare.id else ()
    messages = (*kept, *(decode(Message, m) for m in patch["messages"]))
    records = {r.id: r for r in base.tool_calls} if base is not None and base.id == bare.id else {}
    for r in patch["calls"]:
        record = decode(ToolCallRecord, r)
        records[record.id] = record
    suspension: SuspensionState | None = bare.suspension
    if suspension is not None and patch["suspension_messages"]:
        suspension = replace(suspension, turn_messages=messages)
    return replace(
        bare, messages=messages, tool_calls=tuple(records.values()), suspension=suspension
    )


async def _write(w: Worker, inp: StoreInput) -> StoreOutput:
    session = w.store.session(inp.session_id)
    patch = json.loads(inp.patch_json or "{}")
    known = w.written.get(inp.session_id)
    if known is not None and known[0] == inp.expected_revision:
        turn = _apply(patch, known[1])
    else:
        snap = await session.load()
        turn = _apply(patch, snap.open_turn)
        if snap.revision > inp.expected_revision:  # a retry, or a replay after a lost worker
            stored = snap.open_turn or next(
                (t for t in reversed(await session.turns()) if t.id == turn.id), None
            )
            if stored is not None and stored.id == turn.id and stored.messages == turn.messages:
                return StoreOutput(revision=snap.revision)  # the earlier write landed
    try:
        revision = await session.checkpoint(turn, expected_revision=inp.expected_revision)
    except DiveError:
        w.written.pop(inp.session_id, None)
        raise
    if turn.status in ("running", "suspended"):
        w.remember(inp.session_id, revision, turn)
    else:
        w.written.pop(inp.session_id, None)
    return StoreOutput(revision=revision)


async def store_step(w: Worker, inp: StoreInput) -> StoreOutput:
    """One session store operation; dive's store errors come back as themselves."""
    session = w.store.session(inp.session_id)
    try:
        match inp.op:
            case "load":
                snap = await session.load()
                open_turn = snap.open_turn
                if open_turn is not None and open_turn.status == "incomplete":
                    open_turn = None  # history, as far as the loop here is concerned
                elided = replace(snap, history=(), open_turn=open_turn)
                return StoreOutput(json=dumps(elided), revision=snap.revision)
            case "load_turns":
                turns = [replace(t, messages=(), suspension=None) for t in await session.turns()]
                return StoreOutput(json=json.dumps([json.loads(dumps(t)) for t in turns]))
            case "write":
                return await _write(w, inp)
            case "claim":
                await session.claim(inp.owner, inp.ttl)
            case "renew_claim":
                await session.renew_claim(inp.owner, inp.ttl)
            case "release_claim":
                await session.release_claim(inp.owner)
    except DiveError as exc:
        raise _fail(exc) from exc
    return StoreOutput()


def activities(w: Worker, names: Names) -> list[Callable[..., Any]]:
    """The model, tool, toolset and store activities under ``names``."""

    @activity.defn(name=names.model)
    async def model(inp: ModelInput) -> ModelOutput:
        async with _heartbeats():
            return await model_step(w, inp)

    @activity.defn(name=names.tool)
    async def tool(inp: ToolInput) -> str:
        async with _heartbeats():
            return await tool_step(w, inp)

    @activity.defn(name=names.toolset)
    async def toolset(inp: ToolsetInput) -> str:
        async with _heartbeats():
            return await toolset_step(w, inp)

    @activity.defn(name=names.store)
    async def store(inp: StoreInput) -> StoreOutput:  # run as a local activity: no heartbeats
        return await store_step(w, inp)

    return [model, tool, toolset, store]
