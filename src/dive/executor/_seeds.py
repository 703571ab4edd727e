"""Seed tool calls: run before the first round, as if the model had made them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from dive.agent import to_tool_result
from dive.executor._errors import ExecutorConfigError
from dive.executor._outcomes import Outcomes
from dive.executor._trace import ExecutionTrace, TracedCall
from dive.messages import Message, ToolCall
from dive.tools import Tool, ToolContext, suggest_tool_names

__all__ = ["run_seeds"]


def _check(seeds: Sequence[ToolCall]) -> None:
    ids = [s.id for s in seeds]
    if any(not i for i in ids):
        raise ExecutorConfigError("seed tool calls need non-empty ids")
    if len(set(ids)) != len(ids):
        raise ExecutorConfigError("seed tool call ids must be unique")


async def run_seeds(
    seeds: Sequence[ToolCall],
    tools: Sequence[Tool],
    history: list[Message],
    trace: ExecutionTrace,
    outcomes: Outcomes,
) -> bool:
    """Run each seed in order and append its call and result to ``history``.

    Stops at a commit or an abort (``outcomes``). Returns True when any seed ran. Seeds use
    no round and are traced ``seeded``.
    """
    if not seeds:
        return False
    _check(seeds)
    by_name = {t.name: t for t in tools}
    for seed in seeds:
        history.append(Message(role="assistant", content=(seed,)))
        tool = by_name.get(seed.name)
        if tool is None:
            hint = suggest_tool_names(seed.name, by_name)
            clause = f" Did you mean: {', '.join(hint)}." if hint else ""
            text = f'Tool "{seed.name}" does not exist and was not called.{clause}'
            result = to_tool_result(seed, text, is_error=True)
            trace.add_call(
                TracedCall(
                    id=seed.id,
                    name=seed.name,
                    params=dict(seed.arguments),
                    error=f"UnknownToolError: {text}",
                    seeded=True,
                    end_time=datetime.now(UTC),
                )
            )
        else:
            before = len(trace.tool_calls)
            ctx: ToolContext[None] = ToolContext(
                tool_call_id=seed.id, tool_name=seed.name, turn_id="seed"
            )
            value, error = tool.validate(dict(seed.arguments))
            if error is not None:
                result = to_tool_result(seed, error, is_error=True)
            else:
                result = to_tool_result(seed, await tool.call(value, ctx))
            for record in trace.tool_calls[before:]:
                record.seeded = True
        history.append(Message(role="tool", content=(result,)))
        if outcomes.pending:
            break
    return True
