"""Tracing tool calls: around each handler, and for calls rejected before one ran.

``traced_call`` opens a ``TracedCall`` before a handler and closes it after; ``RejectedCalls``
adds one for each call the loop rejected before any handler ran. The loop answers a call whose
input is not a JSON object without running it; the executor traces it with its input
normalised to ``{}``, and a submission's rejection says ``Failed to parse tool input: …``
(recoverable, like any rejected submission).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from dive.agent import HookContext, to_tool_result
from dive.executor._trace import ExecutionTrace, TracedCall
from dive.messages import ToolCall

__all__ = ["RejectedCalls", "traced_call"]


@asynccontextmanager
async def traced_call(
    trace: ExecutionTrace, call: ToolCall, ctx: Any, *, seeded: bool = False
) -> AsyncGenerator[TracedCall]:
    """Record ``call``; an exception is recorded as the call's error and re-raised."""
    record = trace.add_call(
        TracedCall(
            id=call.id,
            name=call.name,
            params=dict(call.arguments),
            reasoning=getattr(ctx, "reasoning", None),
            seeded=seeded,
            round=getattr(ctx, "round", None),
        )
    )
    try:
        yield record
    except Exception as exc:
        record.error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        record.end_time = datetime.now(UTC)


class RejectedCalls:
    """A ``post_tool_use_failure`` hook: trace the calls that failed before any handler ran.

    Args:
        trace: the execution's trace.
        outcomes: the execution's outcomes (for the round number).
        submit: the submit tool's name (its rejections are recoverable), if any.
    """

    def __init__(self, trace: ExecutionTrace, outcomes: Any, submit: str | None) -> None:
        self._trace = trace
        self._outcomes = outcomes
        self._submit = submit

    def __call__(self, ctx: HookContext[Any]) -> None:
        call, result = ctx.call, ctx.tool_result
        if call is None or result is None or any(c.id == call.id for c in self._trace.tool_calls):
            return  # a handler ran (and traced the call)
        text = result.text
        submission = call.name == self._submit
        if call.raw_arguments is not None and submission:
            text = (
                "Failed to parse tool input: the input is not a JSON object: "
                f"{call.raw_arguments[:200]}"
            )
            ctx.tool_result = to_tool_result(call, json.dumps({"error": text}), is_error=True)
        self._trace.add_call(
            TracedCall(
                id=call.id,
                name=call.name,
                params=dict(call.arguments),
                error=text,
                recoverable=submission,
                round=self._outcomes.round,
                end_time=datetime.now(UTC),
            )
        )
