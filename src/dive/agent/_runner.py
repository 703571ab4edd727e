"""The loop's one I/O seam: every effect of a turn goes through a :class:`Runner`.

The loop decides; a runner acts. Whatever a turn does to the world — a model call (and its
token count), a tool call under its governance, listing a toolset's tools, a read or write of
the session store (claims included), reading the clock, drawing a new id, sleeping — is one
method of the runner the invocation was given. Everything else the loop does is a pure
function of what those methods returned, so a different runner supplies each effect without a
second loop.

:class:`InProcessRunner` is the default: each method does the effect here, in this event
loop. A durable runner (a Temporal workflow, for one) keeps the decisions in replayable code
and makes each effect an activity. Its methods receive small records that name where the
effect happens by reference (:class:`StepRef`: the session id, the turn id, the revision the
store holds), so an activity can read what it needs from the session store instead of being
handed the conversation:

- ``call_model(ModelCall, into, deliver)`` — one model request; a streaming runner folds each
  event into ``into`` (what an interrupted call leaves is salvaged from it) and hands it to
  ``deliver`` when the run has a listener. A runner that cannot stream returns the response.
- ``count_tokens(ModelCall)`` — the request's input tokens (``count_tokens_first`` budgets).
- ``call_tool(ToolTask) -> ToolOutcome`` — one validated call, its timeout and retry policy
  included (a remote runner maps them to its own timeouts and retries: retried only when the
  tool is idempotent or read-only).
- ``list_tools(toolset, ctx)`` — a toolset's tools before a model call.
- ``load``, ``load_turns``, ``write``, ``claim``, ``renew_claim``, ``release_claim`` — the
  session store.
- ``now``, ``monotonic``, ``new_turn_id``, ``sleep`` — the clock, ids and timers.

Every method must behave as :class:`InProcessRunner`'s does (same results, same exceptions);
``tests/test_runner_seam.py`` runs the turn contract through a recording runner and fails on
any effect that bypasses the seam.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, cast, runtime_checkable

from dive.agent._background import BackgroundTaskHandle, start_background, started_text
from dive.agent._output import ModelRetry
from dive.agent._outputs import error_result, to_tool_result
from dive.errors import ToolFatalError
from dive.llm import (
    Model,
    ModelRequest,
    ModelResponse,
    ResponseAccumulator,
    StreamEvent,
    TokenCounter,
)
from dive.messages import ToolCall, ToolResult
from dive.redaction import redact
from dive.sessions import Session, SessionSnapshot
from dive.tools import Background, Suspend, Tool, ToolContext, ToolReturn, Toolset
from dive.turns import CallState, PendingToolCall, Turn, new_turn_id

__all__ = [
    "IN_PROCESS",
    "Deliver",
    "InProcessRunner",
    "ModelCall",
    "Runner",
    "StepRef",
    "ToolOutcome",
    "ToolTask",
]

Deliver = Callable[[StreamEvent], Awaitable[None]]
"""Receives each stream event of a model call (the run's listener)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRef:
    """Where an effect happens, by reference: what a remote runner sends instead of the turn.

    Attributes:
        session_id: the session, or None for a stateless run.
        turn_id: the running turn.
        revision: the session revision of the turn's last write (0 before the first).
        step: the turn's model calls so far (pause resends included): with ``turn_id``, a
            stable name for this step across retries and replays.
    """

    session_id: str | None
    turn_id: str
    revision: int
    step: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCall:
    """One model request of a turn.

    Attributes:
        ref: where it happens (session, turn, revision, step).
        model: the model of the invocation.
        request: what is sent (system prompt, messages, tools, settings).
    """

    ref: StepRef
    model: Model
    request: ModelRequest


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolTask:
    """One validated tool call, ready to run under its tool's governance.

    Attributes:
        ref: where it happens (session, turn, revision, step).
        tool: the tool (its ``definition`` carries timeout, retry policy, effect).
        call: the model's call (id, name, arguments as sent).
        input: the validated input the tool is called with.
        context: the ``ToolContext`` the tool sees.
        log: where a tool's exception is logged (with its traceback; never sent).
    """

    ref: StepRef
    tool: Tool
    call: ToolCall
    input: Any
    context: ToolContext
    log: logging.Logger


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What one call produced: its result and state (``unknown`` after most timeouts).

    A call that returned ``Suspend`` has state ``waiting`` and ``pending`` set; its
    ``result`` is a placeholder that is never recorded. ``terminal``: a ``ToolReturn``
    asked to end the turn. ``background``: the handle of work that moved to a task of its
    own (the result says it started).

    Attributes:
        result: the call's result (a placeholder, never recorded, when it suspended).
        state: the call's state: ``completed``, ``unknown`` (most timeouts) or ``waiting``
            (suspended).
        error: the call's error text, if it failed.
        pending: what the suspension reports about the call (it returned ``Suspend``).
        terminal: a ``ToolReturn`` asked to end the turn.
        background: the handle of work that moved to a task of its own.
        model_retry: the (redacted) message of a ``ModelRetry`` the tool raised; the
            result carries it to the model, and the loop counts it against
            ``Limits.max_tool_retries``.
    """

    result: ToolResult
    state: CallState = "completed"
    error: str | None = None
    pending: PendingToolCall | None = None
    terminal: bool = False
    background: BackgroundTaskHandle | None = None
    model_retry: str | None = None


@runtime_checkable
class Runner(Protocol):
    """Every effect of the loop; see the module docstring for what each method owes."""

    async def call_model(
        self, call: ModelCall, into: ResponseAccumulator, deliver: Deliver | None
    ) -> ModelResponse:
        """Make one model call; stream into ``into`` (and ``deliver``) when streaming.

        Args:
            call: the request, its model and where it happens.
            into: accumulates the stream (the loop reads partial output from it).
            deliver: receives each stream event, or None when nobody listens.
        """
        ...

    async def count_tokens(self, call: ModelCall) -> int:
        """The input tokens of ``call.request`` (the model is a ``TokenCounter``).

        Args:
            call: the request to count, its model and where it happens.
        """
        ...

    async def call_tool(self, task: ToolTask) -> ToolOutcome:
        """Run one tool call under its timeout and retry policy; failures as data.

        Args:
            task: the validated call, its tool and its context.
        """
        ...

    async def list_tools(self, toolset: Toolset, context: ToolContext) -> Sequence[Tool]:
        """A toolset's tools for the next model call.

        Args:
            toolset: the toolset to ask.
            context: the context its tools will run with.
        """
        ...

    async def load(self, session: Session) -> SessionSnapshot:
        """Read the session (history, open turn, revision).

        Args:
            session: the session to read.
        """
        ...

    async def load_turns(self, session: Session) -> list[Turn]:
        """Every recorded turn of the session (session usage limits).

        Args:
            session: the session to read.
        """
        ...

    async def write(self, session: Session, turn: Turn, *, expected_revision: int) -> int:
        """Write the turn's record; returns the new revision.

        Args:
            session: the session to write to.
            turn: the turn's record.
            expected_revision: the revision the turn last saw; another one raises
                ``RevisionConflictError``.
        """
        ...

    async def claim(self, session: Session, owner: str, ttl: float) -> None:
        """Claim the session for ``owner`` for ``ttl`` seconds.

        Args:
            session: the session to claim.
            owner: who claims it.
            ttl: seconds the claim lasts unless renewed.
        """
        ...

    async def renew_claim(self, session: Session, owner: str, ttl: float) -> None:
        """Extend ``owner``'s claim.

        Args:
            session: the claimed session.
            owner: the claim's owner.
            ttl: seconds from now the claim lasts.
        """
        ...

    async def release_claim(self, session: Session, owner: str) -> None:
        """Give the claim up.

        Args:
            session: the claimed session.
            owner: the claim's owner.
        """
        ...

    def now(self) -> datetime:
        """The wall clock (timezone-aware UTC): timestamps of messages and records."""
        ...

    def monotonic(self) -> float:
        """A monotonic clock in seconds (durations in traces)."""
        ...

    def new_turn_id(self) -> str:
        """A fresh turn id."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (claim renewals, tool retry delays).

        Args:
            seconds: how long to wait.
        """
        ...


class _Timeout(Exception):
    pass


RETRY_ADVICE = "Fix the errors and try again."
"""What follows a ``ModelRetry`` message in the call's result (as pydantic-ai words it)."""


class InProcessRunner:
    """Every effect done here, in this event loop: the default runner.

    Subclass it to replace some effects and keep the rest (a recording runner in tests,
    a runner with a fake clock).
    """

    __slots__ = ()

    async def call_model(
        self, call: ModelCall, into: ResponseAccumulator, deliver: Deliver | None
    ) -> ModelResponse:
        """Stream (or generate) the response; see :class:`Runner`."""
        model = call.model
        if not model.supports_streaming:
            return await model.generate(call.request)
        add = into.add
        if deliver is None:  # raw deltas go only to a listener; nothing else needs them
            async for event in model.stream(call.request):
                add(event)
            return into.response()
        async for event in model.stream(call.request):
            add(event)
            await deliver(event)
        return into.response()

    async def count_tokens(self, call: ModelCall) -> int:
        """Ask the model to count the request's tokens."""
        return await cast("TokenCounter", call.model).count_tokens(call.request)

    async def call_tool(self, task: ToolTask) -> ToolOutcome:
        """Run the call under its timeout and retry policy; see the ``_exec`` module."""
        tool, call, ctx = task.tool, task.call, task.context
        d = tool.definition
        policy = d.retry_policy
        attempts = 1
        if policy is not None and (d.idempotent or d.read_only):
            attempts = policy.max_attempts  # only a tool a repeat cannot harm is retried
        for k in range(attempts):
            ctx.attempt = k + 1
            try:
                if d.timeout is None:
                    output = await tool.call(task.input, ctx)
                else:
                    output = await _attempt(tool, task.input, ctx, d.timeout)
            except _Timeout:
                last = f'Tool "{call.name}" timed out after {d.timeout or 0:g} s.'
                if k + 1 == attempts:
                    state: CallState = "completed" if d.read_only else "unknown"
                    return ToolOutcome(result=error_result(call, last), state=state, error=last)
            except ModelRetry as exc:  # feedback for the model, never retried here
                message = redact(exc.message)
                task.log.debug("tool %s (call %s) asked the model to retry", call.name, call.id)
                text = f"{message}\n\n{RETRY_ADVICE}"
                return ToolOutcome(result=error_result(call, text), model_retry=message)
            except ToolFatalError as exc:
                text = redact(f"Tool execution error: {exc}")
                return ToolOutcome(result=error_result(call, text), error=redact(repr(exc)))
            except Exception as exc:
                task.log.error("tool %s (call %s) raised", call.name, call.id, exc_info=True)
                last = redact(
                    f"Tool execution error: {exc}" if str(exc) else f"Tool execution error: {exc!r}"
                )
                if k + 1 == attempts:
                    if attempts > 1:
                        last = f"{last} (after {attempts} attempts)"
                    return ToolOutcome(result=error_result(call, last), error=redact(repr(exc)))
            else:
                return tool_outcome(task, output)
            assert policy is not None
            delay = policy.delay(k)
            await self.sleep(delay + random.uniform(0, delay * 0.1))
        raise AssertionError("unreachable")  # pragma: no cover

    async def list_tools(self, toolset: Toolset, context: ToolContext) -> Sequence[Tool]:
        """Ask the toolset for its tools."""
        return await toolset.tools(context)

    async def load(self, session: Session) -> SessionSnapshot:
        """``session.load()``."""
        return await session.load()

    async def load_turns(self, session: Session) -> list[Turn]:
        """``session.turns()``."""
        return await session.turns()

    async def write(self, session: Session, turn: Turn, *, expected_revision: int) -> int:
        """``session.checkpoint(turn, expected_revision=...)``."""
        return await session.checkpoint(turn, expected_revision=expected_revision)

    async def claim(self, session: Session, owner: str, ttl: float) -> None:
        """``session.claim(owner, ttl)``."""
        await session.claim(owner, ttl)

    async def renew_claim(self, session: Session, owner: str, ttl: float) -> None:
        """``session.renew_claim(owner, ttl)``."""
        await session.renew_claim(owner, ttl)

    async def release_claim(self, session: Session, owner: str) -> None:
        """``session.release_claim(owner)``."""
        await session.release_claim(owner)

    def now(self) -> datetime:
        """``datetime.now(UTC)``."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()

    def new_turn_id(self) -> str:
        """A random turn id (``turn_`` and 32 hex digits)."""
        return new_turn_id()

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep(seconds)``."""
        await asyncio.sleep(seconds)


IN_PROCESS = InProcessRunner()
"""The default runner (stateless, shared)."""


async def _attempt(tool: Tool, value: Any, ctx: ToolContext, limit: float) -> Any:
    cm = asyncio.timeout(limit)
    try:
        async with cm:
            return await tool.call(value, ctx)
    except TimeoutError:
        if cm.expired():
            raise _Timeout() from None
        raise


def tool_outcome(task: ToolTask, output: Any) -> ToolOutcome:
    """What a tool's return value means: a suspension, background work, or a result."""
    call = task.call
    if isinstance(output, Suspend):
        pending = PendingToolCall(
            id=call.id,
            name=call.name,
            input=call.arguments,
            prompt=output.prompt,
            reason=output.reason,
            metadata=output.metadata,
            halts_batch=task.tool.definition.halts_batch,
            started=True,
            call_again=output.call_again,
        )
        return ToolOutcome(
            result=error_result(call, output.prompt), state="waiting", pending=pending
        )
    if isinstance(output, Background):
        handle = start_background(output, call, task.ref.turn_id)
        return ToolOutcome(result=to_tool_result(call, started_text(handle)), background=handle)
    ends = isinstance(output, ToolReturn) and output.terminal
    return ToolOutcome(result=to_tool_result(call, output), terminal=ends)
