"""Seed tool calls: run before the first round, as if the model had made them."""

from __future__ import annotations

from collections.abc import Sequence

from dive.agent import to_tool_result
from dive.executor._errors import ExecutorConfigError
from dive.executor._outcomes import Outcomes
from dive.executor._trace import ExecutionTrace
from dive.messages import Message, ToolCall, ToolResult
from dive.tools import Tool, ToolContext

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
            names = ", ".join(sorted(by_name))
            result = ToolResult(
                tool_call_id=seed.id,
                name=seed.name,
                is_error=True,
            )
            text = f'Tool "{seed.name}" does not exist and was not called. Available: {names}'
            result = to_tool_result(seed, text, is_error=True)
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
