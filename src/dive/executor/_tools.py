"""Executor tools: a definition plus a handler ``(call, ctx) -> output``.

Outputs: a mapping (one text block of compact JSON), a ``ToolResult`` (as given), a
``Commit(response)`` (ends the run with that response), or None (``null``). A handler that
raises ``AbortExecution`` stops the run; any other exception becomes the loop's ``is_error``
result and the run goes on. Each handler runs inside the loop, so the tool's governance
(schema, timeout, retry policy, approval) applies as for any tool.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, cast

from pydantic import BaseModel
from typing_extensions import TypeVar

from dive.executor._errors import AbortExecution
from dive.executor._outcomes import Outcomes
from dive.executor._trace import ExecutionTrace
from dive.messages import JSONValue, ToolCall, ToolDefinition, ToolResult
from dive.tools import FunctionTool, Suspend, Tool, ToolContext, ToolOutput, ToolReturn

__all__ = [
    "Commit",
    "ExecutorTool",
    "ExecutorToolContext",
    "HandlerOutput",
    "ToolHandler",
    "tool_error",
]

ResponseT = TypeVar("ResponseT", bound=BaseModel, default=BaseModel)
ResponseT_co = TypeVar("ResponseT_co", bound=BaseModel, covariant=True, default=BaseModel)

REASONING_PARAM = "Explain why you are making this tool call and what you hope to accomplish."


@dataclass(frozen=True, slots=True)
class Commit(Generic[ResponseT]):
    """Returned by a handler: end the run with ``response``.

    Attributes:
        response: the run's response.
    """

    response: ResponseT


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutorToolContext(Generic[ResponseT]):
    """What a handler sees: the trace, the round, the idempotency key and the reasoning.

    Attributes:
        trace: the execution's trace so far.
        round: the current model round, from 0.
        turn_id: the run's turn id (with ``tool_call_id``, an idempotency key).
        tool_call_id: the call's id.
        reasoning: the ``reasoning`` argument the model gave, if the tool takes one.
    """

    trace: ExecutionTrace = field(repr=False)
    round: int
    turn_id: str
    tool_call_id: str
    reasoning: str | None = None


HandlerOutput = Mapping[str, JSONValue] | ToolResult | Commit[Any] | Suspend | None


class ToolHandler(Protocol[ResponseT_co]):
    """``async def handler(call, ctx) -> HandlerOutput``."""

    def __call__(
        self, call: ToolCall, ctx: ExecutorToolContext[Any], /
    ) -> Awaitable[HandlerOutput]: ...


def tool_error(message: str, **context: JSONValue) -> ToolResult:
    """An ``is_error`` result ``{"error": message, …context}``.

    Args:
        message: what went wrong, for the model.
        context: more JSON fields of the result.
    """
    data: dict[str, Any] = {"error": message, **context}
    from dive.messages import TextBlock

    return ToolResult(
        tool_call_id="",
        name="",
        content=(TextBlock(text=json.dumps(data, separators=(",", ":"))),),
        structured=data,
        is_error=True,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutorTool(Generic[ResponseT]):
    """A tool the executor offers: ``definition`` (name, schema, governance) and ``handler``.

    Attributes:
        definition: the tool's name, schema and governance fields.
        handler: ``handler(call, ctx)``: returns a mapping (sent as JSON), a ``ToolResult``,
            ``tool_error(...)``, ``Commit(response)``, ``Suspend(...)`` or None.
        reasoning: the schema has a required ``reasoning`` argument, stripped before the handler
            runs and given as ``ctx.reasoning``.
    """

    definition: ToolDefinition
    handler: ToolHandler[ResponseT]
    reasoning: bool = False

    @staticmethod
    def from_function(
        fn: Callable[..., Any], *, reasoning: bool = True, **definition_fields: Any
    ) -> ExecutorTool[Any]:
        """A tool from a typed function; its arguments are the function's parameters.

        With ``reasoning`` a required ``reasoning`` string is added to the schema; the
        executor strips it from the arguments and hands it over as ``ctx.reasoning``.

        Args:
            fn: the typed function (sync or async); its parameters are the arguments.
            reasoning: add the required ``reasoning`` argument.
            definition_fields: governance fields of the tool (``name``, ``description``,
                ``effect_type``, ...).
        """
        base = FunctionTool(fn, **definition_fields)
        definition = base.definition
        if reasoning:
            schema: dict[str, Any] = dict(definition.input_schema)
            props: dict[str, Any] = {
                "reasoning": {"type": "string", "description": REASONING_PARAM}
            }
            props.update(cast(Mapping[str, Any], schema.get("properties", {})))
            schema["properties"] = props
            schema["required"] = ["reasoning", *cast(list[str], schema.get("required", []))]
            definition = replace(definition, input_schema=schema)

        async def handler(call: ToolCall, ctx: ExecutorToolContext[Any]) -> HandlerOutput:
            value, error = base.validate(dict(call.arguments))
            if error is not None:
                return tool_error(error)
            out = await base.call(value, cast(ToolContext[Any], None))
            if isinstance(out, Commit | ToolResult) or out is None:
                return cast(HandlerOutput, out)
            if isinstance(out, Mapping):
                return cast(Mapping[str, JSONValue], out)
            return {"result": cast(JSONValue, out)}

        return ExecutorTool(definition=definition, handler=handler, reasoning=reasoning)


class HandlerTool(Tool):
    """An ``ExecutorTool`` as a loop tool: strips ``reasoning``, traces, encodes the output."""

    def __init__(
        self,
        tool: ExecutorTool[Any],
        trace: ExecutionTrace,
        outcomes: Outcomes,
    ) -> None:
        self._tool = tool
        self._trace = trace
        self._outcomes = outcomes
        self.definition = tool.definition

    async def call(self, input: Any, ctx: ToolContext[Any]) -> ToolOutput:
        from dive.executor._calls import traced_call

        args = dict(cast(Mapping[str, Any], input))
        reasoning = args.pop("reasoning", None) if self._tool.reasoning else None
        call = ToolCall(id=ctx.tool_call_id, name=self.name, arguments=args)
        xctx: ExecutorToolContext[Any] = ExecutorToolContext(
            trace=self._trace,
            round=self._outcomes.round,
            turn_id=ctx.turn_id,
            tool_call_id=ctx.tool_call_id,
            reasoning=reasoning if isinstance(reasoning, str) else None,
        )
        async with traced_call(self._trace, call, xctx) as record:
            try:
                out = self._tool.handler(call, xctx)
                if inspect.isawaitable(out):
                    out = await out
                return encode(out, record, self._outcomes)
            except AbortExecution as exc:
                self._outcomes.set_abort(call.id, exc, record)
                record.error = f"aborted: {exc.reason}"
                return ToolReturn(content={"error": exc.reason}, is_error=True, terminal=True)


def encode(out: Any, record: Any, outcomes: Outcomes) -> ToolOutput:
    """A handler's output as a loop tool output (and its effect on the trace)."""
    if isinstance(out, Suspend):
        record.result = {"suspended": out.prompt}
        return out
    if isinstance(out, Commit):
        record.terminal = True
        outcomes.set_commit(record.id, cast(Commit[Any], out).response, record)
        record.result = {"success": True}
        return ToolReturn(content={"success": True}, terminal=True)
    if out is None:
        record.result = None
        return "null"
    if isinstance(out, ToolResult):
        record.result = out.text
        if out.is_error:
            record.error = out.text
        return ToolReturn(content=list(out.content) or out.text, is_error=out.is_error)
    if isinstance(out, Mapping):
        data = dict(cast(Mapping[str, Any], out))
        try:
            text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise AbortExecution(
                f"failed to encode tool result for '{record.name}': {exc}"
            ) from exc
        record.result = data
        return text
    raise AbortExecution(
        f"failed to encode tool result for '{record.name}': a handler returned "
        f"{type(out).__name__}; return a mapping, a ToolResult, Commit(...) or None"
    )
