"""Rounds in the trace: one per model call of a loop turn, with its usage."""

from __future__ import annotations

from typing import Any

from dive.agent import MessageEvent, RunResult
from dive.executor._trace import ExecutionTrace, TracedRound
from dive.llm import Model
from dive.messages import RedactedThinkingBlock, ThinkingBlock
from dive.messages.codec import to_jsonable

__all__ = ["record_rounds"]


def record_rounds(
    trace: ExecutionTrace, result: RunResult[Any], base: int, model: Model, *, capture: bool
) -> int:
    """Add a round per assistant message of ``result``; returns how many model calls it made.

    With ``capture`` (``capture_payloads``) each round keeps the response's content and the
    trace keeps the reasoning text; redacted reasoning is always noted.
    """
    index = base
    for event in result.items:
        if not isinstance(event, MessageEvent) or event.message.role != "assistant":
            continue
        usage = event.usage
        trace.add_round(
            TracedRound(
                index=index,
                model=model.name,
                provider=model.provider,
                stop_reason=None,
                input_tokens=usage.input_tokens if usage else 0,
                output_tokens=usage.output_tokens if usage else 0,
                cache_read_tokens=usage.cache_read_input_tokens if usage else 0,
                cache_creation_tokens=usage.cache_creation_input_tokens if usage else 0,
                reasoning_tokens=usage.reasoning_tokens if usage else None,
                cost=usage.cost if usage else None,
                response=to_jsonable(event.message.content) if capture else None,
            )
        )
        for block in event.message.content:
            if isinstance(block, RedactedThinkingBlock):
                trace.add_reasoning(index, None, redacted=True)
            elif isinstance(block, ThinkingBlock) and capture:
                trace.add_reasoning(index, block.thinking)
        index += 1
    if trace.rounds and result.stop_reason is not None:
        trace.rounds[-1].stop_reason = result.stop_reason
    return index - base  # this invocation's model calls (a resumed turn's earlier ones excluded)
