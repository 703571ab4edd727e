"""What ``as_mcp_server`` serves: one dive tool, or a whole agent, as an MCP tool.

Each entry starts a call and, when the tool (or the agent's turn) suspends, says what to ask
(:class:`Ask`: the elicitation and the JSON state that goes on from the answer). The server
turns an ``Ask`` into a 2026-07-28 input-required result (the state sealed in its
``request_state``, nothing kept in memory) or, for a 2025-era client, an elicitation request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from mcp import types
from pydantic import BaseModel, ValidationError

from dive.messages import (
    Base64Source,
    DocumentBlock,
    ImageBlock,
    JSONValue,
    Message,
    TextBlock,
    messages_from_json,
    messages_to_json,
)
from dive.tools import ResumedCall, Suspend, Tool, ToolContext, ToolReturn
from dive.turns import PendingToolCall, SuspensionState

if TYPE_CHECKING:
    from dive.agent import Agent, RunResult

__all__ = ["AgentEntry", "Ask", "Entry", "ToolEntry"]

_ANSWER = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
_APPROVAL = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean", "description": "Allow the call?"},
        "message": {"type": "string", "description": "Why (optional)."},
    },
    "required": ["approved"],
}


@dataclass(frozen=True, slots=True)
class Ask:
    """Questions to put to the client, and the state to go on from their answers."""

    requests: dict[str, types.ElicitRequest]
    state: dict[str, Any]


Outcome = types.CallToolResult | Ask


def _text(text: str) -> list[types.ContentBlock]:
    return [types.TextContent(type="text", text=text)]


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=_text(text), is_error=True)


def _content(block: Any) -> types.ContentBlock:
    if isinstance(block, ImageBlock) and isinstance(block.source, Base64Source):
        src = block.source
        return types.ImageContent(type="image", data=src.data, mime_type=src.media_type)
    if isinstance(block, DocumentBlock) and isinstance(block.source, Base64Source):
        src = block.source
        resource = types.BlobResourceContents(
            uri=f"dive:document/{block.title or 'document'}",
            blob=src.data,
            mime_type=src.media_type,
        )
        return types.EmbeddedResource(type="resource", resource=resource)
    if isinstance(block, TextBlock):
        return types.TextContent(type="text", text=block.text)
    return types.TextContent(type="text", text=f"[{type(block).__name__} not sent over MCP]")


def to_result(output: Any, *, is_error: bool = False) -> types.CallToolResult:
    """A dive tool output (not a suspension) as an MCP result."""
    if isinstance(output, ToolReturn):
        inner = to_result(output.content, is_error=output.is_error or is_error)
        if output.structured is not None:
            inner.structured_content = output.structured
        return inner
    if isinstance(output, str):
        content: list[types.ContentBlock] = (
            [types.TextContent(type="text", text=output)] if output else []
        )
        return types.CallToolResult(content=content, is_error=is_error)
    if isinstance(output, TextBlock | ImageBlock | DocumentBlock):
        return types.CallToolResult(content=[_content(output)], is_error=is_error)
    if (
        isinstance(output, list | tuple)
        and all(
            isinstance(b, TextBlock | ImageBlock | DocumentBlock) for b in cast("list[Any]", output)
        )
        and output
    ):
        blocks = cast("list[Any]", output)
        return types.CallToolResult(content=[_content(b) for b in blocks], is_error=is_error)
    value = cast(Any, output)
    data: Any = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    try:
        text = json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError):
        return _error(f"the tool returned a {type(value).__name__}, which cannot be sent")
    structured: Any = cast("dict[str, Any]", data) if isinstance(data, dict) else None
    return types.CallToolResult(
        content=_text(text),
        structured_content=structured,
        is_error=is_error,
    )


def _form(message: str, schema: Any) -> types.ElicitRequest:
    try:
        params = types.ElicitRequestFormParams(message=message, requested_schema=schema)
    except ValidationError:
        params = types.ElicitRequestFormParams(message=message, requested_schema=_ANSWER)
    return types.ElicitRequest(params=params)


def ask_for(
    prompt: str, reason: str, metadata: Mapping[str, JSONValue]
) -> tuple[types.ElicitRequest, str]:
    """The elicitation a suspension asks for, and how its answer is read (its shape)."""
    url = metadata.get("url")
    if reason == "auth_required" and isinstance(url, str):
        params = types.ElicitRequestURLParams(message=prompt, url=url, elicitation_id="dive")
        return types.ElicitRequest(params=params), "url"
    if reason == "approval_required":
        return _form(prompt, _APPROVAL), "approval"
    schema = metadata.get("requested_schema")
    if isinstance(schema, Mapping):
        request = _form(prompt, schema)
        params = request.params
        if isinstance(params, types.ElicitRequestFormParams) and params.requested_schema != _ANSWER:
            return request, "form"
    return _form(prompt, _ANSWER), "answer"


def read_answer(shape: str, result: types.ElicitResult) -> Any:
    """What a client's answer means to dive (None: declined or cancelled)."""
    if result.action != "accept":
        if shape == "approval":
            from dive.agent import ToolApproval

            return ToolApproval(approved=False, message=f"The user chose {result.action}.")
        return None
    content = dict(result.content or {})
    if shape == "answer":
        return content.get("answer", "")
    if shape == "approval":
        from dive.agent import ToolApproval

        message = content.get("message")
        return ToolApproval(
            approved=bool(content.get("approved")),
            message=message if isinstance(message, str) else None,
        )
    if shape == "url":
        return {"action": "accept"}
    return content


class Entry:
    """One served MCP tool."""

    definition: types.Tool

    async def start(self, arguments: dict[str, Any], ctx: ToolContext[Any]) -> Outcome:
        """A first call."""
        raise NotImplementedError

    async def resume(
        self,
        state: Mapping[str, Any],
        answers: Mapping[str, types.ElicitResult],
        ctx: ToolContext[Any],
    ) -> Outcome:
        """The call again, with the answers to what it asked."""
        raise NotImplementedError


class ToolEntry(Entry):
    """A dive tool; a ``Suspend`` becomes a question.

    The answer is the call's result, or (with ``call_again``) what the tool returns when it
    is called again with it.
    """

    def __init__(self, tool: Tool) -> None:
        self.tool = tool
        d = tool.definition
        hints = tool.annotations
        self.definition = types.Tool(
            name=d.name,
            description=d.description,
            input_schema=cast(
                "dict[str, Any]", json.loads(json.dumps(d.input_schema, default=dict))
            ),
            annotations=types.ToolAnnotations(
                title=hints.title,
                read_only_hint=True if d.read_only else hints.read_only,
                destructive_hint=hints.destructive,
                idempotent_hint=True if d.idempotent else hints.idempotent,
                open_world_hint=hints.open_world,
            ),
        )

    async def _run(self, arguments: Mapping[str, Any], ctx: ToolContext[Any]) -> Outcome:
        value, err = self.tool.validate(arguments)
        if err is not None:
            return _error(err)
        try:
            output = await self.tool.call(value, ctx)
        except Exception as exc:
            return _error(f"Tool execution error: {exc}" if str(exc) else repr(exc))
        if isinstance(output, Suspend):
            request, shape = ask_for(output.prompt, output.reason, output.metadata)
            state = {
                "arguments": dict(arguments),
                "prompt": output.prompt,
                "reason": output.reason,
                "metadata": dict(output.metadata),
                "call_again": output.call_again,
                "shape": shape,
            }
            return Ask(requests={"answer": request}, state=state)
        return to_result(output)

    async def start(self, arguments: dict[str, Any], ctx: ToolContext[Any]) -> Outcome:
        """Run the tool."""
        return await self._run(arguments, ctx)

    async def resume(
        self,
        state: Mapping[str, Any],
        answers: Mapping[str, types.ElicitResult],
        ctx: ToolContext[Any],
    ) -> Outcome:
        """The answer as the result, or the tool called again with it."""
        answer = answers.get("answer")
        value = read_answer(str(state["shape"]), answer) if answer is not None else None
        if value is None:
            return _error("The user did not answer; the tool did not finish.")
        if not state.get("call_again"):
            return to_result(value)
        ctx.resumed = ResumedCall(
            answer=cast(JSONValue, value),
            prompt=str(state["prompt"]),
            reason=state["reason"],
            metadata=cast("dict[str, JSONValue]", state["metadata"]),
        )
        return await self._run(cast("dict[str, Any]", state["arguments"]), ctx)


class AgentEntry(Entry):
    """A whole agent as one tool: ``{"prompt": ...}`` → a stateless turn → its answer."""

    def __init__(self, agent: Agent[Any, Any], name: str) -> None:
        self.agent = agent
        self.definition = types.Tool(
            name=name,
            description=agent.description or f"Ask the {name} agent; it answers in text.",
            input_schema={
                "type": "object",
                "properties": {"prompt": {"type": "string", "description": "What to ask."}},
                "required": ["prompt"],
            },
        )

    async def start(self, arguments: dict[str, Any], ctx: ToolContext[Any]) -> Outcome:
        """A new stateless turn on the prompt."""
        prompt = arguments.get("prompt")
        if not isinstance(prompt, str):
            return _error('the agent tool takes {"prompt": "<text>"}')
        result = await self.agent.run(prompt, session=None)
        return self._outcome(result, [])

    async def resume(
        self,
        state: Mapping[str, Any],
        answers: Mapping[str, types.ElicitResult],
        ctx: ToolContext[Any],
    ) -> Outcome:
        """Resume the suspended turn with the answers (one per pending call)."""
        suspension = SuspensionState.from_json(json.dumps(state["suspension"]))
        history = messages_from_json(json.dumps(state["history"]))
        shapes = cast("dict[str, str]", state["shapes"])
        results: dict[str, Any] = {}
        for call_id, shape in shapes.items():
            answer = answers.get(call_id)
            value = read_answer(shape, answer) if answer is not None else None
            results[call_id] = (
                value
                if value is not None
                else ToolReturn(content="The user did not answer.", is_error=True)
            )
        result = await self.agent.run(
            history=history, suspension=suspension, tool_results=results, session=None
        )
        return self._outcome(result, list(history))

    def _outcome(self, result: RunResult[Any], history: list[Message]) -> Outcome:
        if result.status == "completed":
            output = result.raw_output
            if isinstance(output, str) or output is None:
                return to_result(result.output_text)
            return to_result(output)
        if result.status == "suspended" and result.turn.suspension is not None:
            return self._ask(result.turn.suspension, history)
        return _error(f"The agent's turn did not finish: {result}")

    def _ask(self, suspension: SuspensionState, history: list[Message]) -> Ask:
        requests: dict[str, types.ElicitRequest] = {}
        shapes: dict[str, str] = {}
        pending: PendingToolCall
        for pending in suspension.pending_tool_calls:
            request, shape = ask_for(pending.prompt, pending.reason, pending.metadata)
            requests[pending.id] = request
            shapes[pending.id] = shape
        state = {
            "suspension": json.loads(suspension.to_json()),
            "history": json.loads(messages_to_json(history)),
            "shapes": shapes,
        }
        return Ask(requests=requests, state=state)
