"""Tracing one tool call: a ``TracedCall`` opened before the handler and closed after it."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from dive.executor._trace import ExecutionTrace, TracedCall
from dive.messages import ToolCall

__all__ = ["traced_call"]


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
