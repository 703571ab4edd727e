"""``RemoteAgent``: an A2A agent as a dive tool (and an extension), on the SDK's client.

As a tool the model calls it with ``{"message": ..., "task_id": ...}``: the message goes to
the remote agent (streamed when the agent streams: its text reaches the caller's run as
``tool_stream`` events) and the task's answer is the tool result. Calls from one dive session
share one remote context (derived from the session id), so the remote agent remembers the
conversation.

When the remote task asks for input (``input-required`` / ``auth-required``), the call
returns ``Suspend(prompt)``: the calling turn suspends with the remote prompt. The caller
resumes as usual, ``run(tool_results={call_id: "the answer"})``; used as an *extension*
(``Agent(extensions=[remote])``), its ``post_tool_use`` hook sends that answer to the remote
task and the remote reply becomes the call's result. (Used only as a tool, the answer itself
is the result.) If the remote task asks again, the result says so and names the task: the
model continues it by calling the tool with ``task_id``.

The remote task of a suspended call is found in the calling session's stored suspension
(the ``Suspend`` metadata), so a resume in another process works; stateless runs use this
object's memory.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.types import Message as A2AMessage

from dive.a2a._parts import message_text, part_data
from dive.agent import HookContext, Hooks
from dive.errors import UserError
from dive.messages import JSONValue, TextBlock, ToolDefinition, ToolResult
from dive.tools import Suspend, Tool, ToolContext, ToolOutput, ToolReturn

__all__ = ["RemoteAgent", "RemoteEvent", "RemoteTask"]

RemoteState = Literal[
    "submitted",
    "working",
    "completed",
    "failed",
    "canceled",
    "input-required",
    "rejected",
    "auth-required",
    "unknown",
]

_STATES: dict[int, RemoteState] = {
    TaskState.TASK_STATE_SUBMITTED: "submitted",
    TaskState.TASK_STATE_WORKING: "working",
    TaskState.TASK_STATE_COMPLETED: "completed",
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_CANCELED: "canceled",
    TaskState.TASK_STATE_INPUT_REQUIRED: "input-required",
    TaskState.TASK_STATE_REJECTED: "rejected",
    TaskState.TASK_STATE_AUTH_REQUIRED: "auth-required",
}

_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What to tell or ask the remote agent."},
        "task_id": {
            "type": "string",
            "description": "Continue this remote task (one that asked for more input).",
        },
    },
    "required": ["message"],
    "additionalProperties": False,
}

_KEY = "a2a"


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteTask:
    """A remote task as it stands.

    Attributes:
        id: the task id (pass it as ``task_id=`` to continue the task).
        context_id: the remote conversation (pass it as ``context_id=`` to stay in it).
        state: the task state (``completed``, ``input-required``, ``failed``, …).
        text: the answer: the text of the task's artifacts (empty until it has one).
        status_text: the text of the status message (the question of an input-required
            task, the reason of a failed one).
        data: the JSON values of the artifacts' data parts.
    """

    id: str
    context_id: str
    state: RemoteState
    text: str = ""
    status_text: str = ""
    data: tuple[Any, ...] = ()

    @property
    def needs_input(self) -> bool:
        """True when the task waits for an answer (input or auth required)."""
        return self.state in ("input-required", "auth-required")


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteEvent:
    """One update of a streamed remote task.

    Attributes:
        type: ``text`` (a piece of text the agent streamed), ``status`` (the state moved)
            or ``artifact`` (an output arrived).
        text: the streamed text, the status text or the artifact text.
        task: the task as it stands after this update.
    """

    type: Literal["text", "status", "artifact"]
    text: str
    task: RemoteTask


@dataclass(slots=True)
class _Tracker:
    """Folds stream responses into the task they describe."""

    id: str = ""
    context_id: str = ""
    state: RemoteState = "submitted"
    status_text: str = ""
    artifacts: dict[str, list[Part]] = field(default_factory=dict[str, list[Part]])

    def task(self) -> RemoteTask:
        texts: list[str] = []
        data: list[Any] = []
        for parts in self.artifacts.values():
            texts.extend(p.text for p in parts if p.HasField("text"))
            data.extend(part_data(p) for p in parts if p.HasField("data"))
        return RemoteTask(
            id=self.id,
            context_id=self.context_id,
            state=self.state,
            text="".join(texts),
            status_text=self.status_text,
            data=tuple(data),
        )

    def whole(self, task: Task) -> None:
        self.id, self.context_id = task.id, task.context_id
        self.state = _STATES.get(task.status.state, "unknown")
        self.status_text = _texts(task.status.message)
        self.artifacts = {a.artifact_id: list(a.parts) for a in task.artifacts}

    def fold(self, response: StreamResponse) -> RemoteEvent | None:
        if response.HasField("task"):
            self.whole(response.task)
            return RemoteEvent(type="status", text=self.status_text, task=self.task())
        if response.HasField("status_update"):
            update = response.status_update
            self.id, self.context_id = update.task_id, update.context_id
            state = _STATES.get(update.status.state, "unknown")
            text = _texts(update.status.message)
            if state == "working" and self.state == "working":
                parts = update.status.message.parts
                if parts and all(p.HasField("text") for p in parts):
                    return RemoteEvent(type="text", text=text, task=self.task())
                return None  # tool progress of the remote agent
            self.state, self.status_text = state, text
            return RemoteEvent(type="status", text=text, task=self.task())
        if response.HasField("artifact_update"):
            update = response.artifact_update
            artifact = update.artifact
            kept = self.artifacts.setdefault(artifact.artifact_id, [])
            if not update.append:
                kept.clear()
            kept.extend(artifact.parts)
            text = "".join(p.text for p in artifact.parts if p.HasField("text"))
            return RemoteEvent(type="artifact", text=text, task=self.task())
        if response.HasField("message"):  # a server that answers with a bare message
            self.state = "completed"
            self.artifacts = {"message": list(response.message.parts)}
            return RemoteEvent(
                type="artifact", text=message_text(response.message), task=self.task()
            )
        return None


def _texts(message: A2AMessage) -> str:
    """The text parts of a message (data parts left out)."""
    return "\n".join(p.text for p in message.parts if p.HasField("text"))


def _tool_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", name.strip()).strip("_").lower()
    return (cleaned or "remote_agent")[:64]


class RemoteAgent(Tool):
    """An A2A agent at ``url``, to call directly or give to an ``Agent``.

    ``Agent(tools=[remote])`` makes it a tool; ``Agent(extensions=[remote])`` also forwards
    the caller's resume to a remote task that asked for input (see the module docstring).
    ``await RemoteAgent.connect(url)`` names the tool after the remote agent's card.

    Args:
        url: the agent's base URL (its card is at ``<url>/.well-known/agent-card.json``).
        name: the tool's name (default ``remote_agent``).
        description: the tool's description, for the model.
        streaming: stream when the agent supports it.
        timeout: seconds for one request (a streamed one: between two events).
        headers: HTTP headers for every request (credentials, for instance).
        card: the agent's card, if already fetched (else it is fetched on first use).
    """

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        description: str | None = None,
        streaming: bool = True,
        timeout: float = 300.0,
        headers: Mapping[str, str] | None = None,
        card: AgentCard | None = None,
    ) -> None:
        self.url = url
        self.streaming = streaming
        self.timeout = timeout
        self.headers = dict(headers or {})
        self.definition = ToolDefinition(
            name=_tool_name(name or "remote_agent"),
            description=description or f"Send a message to the remote agent at {url}.",
            input_schema=_SCHEMA,
            origin="a2a",
            effect_type="external_side_effect",
        )
        self._card = card
        self._waiting: dict[str, tuple[str, str]] = {}

    @classmethod
    async def connect(cls, url: str, **options: Any) -> RemoteAgent:
        """A ``RemoteAgent`` named and described after the card at ``url``.

        Args:
            url: the agent's base URL.
            options: other :class:`RemoteAgent` arguments (``headers``, ``timeout``, ...).
        """
        probe = cls(url, **options)
        card = await probe.card()
        skills = "; ".join(f"{s.name}: {s.description.rstrip('.')}" for s in card.skills)
        description = card.description + (f" Skills: {skills}." if skills else "")
        options.setdefault("name", card.name)
        options.setdefault("description", description)
        options["card"] = card
        return cls(url, **options)

    def _http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=self.timeout, headers=self.headers)

    async def card(self) -> AgentCard:
        """The remote agent's card (fetched once)."""
        if self._card is None:
            async with self._http() as http:
                self._card = await A2ACardResolver(http, self.url).get_agent_card()
        return self._card

    async def _client(self, http: httpx.AsyncClient) -> Client:
        config = ClientConfig(streaming=self.streaming, httpx_client=http)
        return ClientFactory(config).create(await self.card())

    # --- direct use ------------------------------------------------------------------------

    async def send(
        self, text: str, *, task_id: str | None = None, context_id: str | None = None
    ) -> RemoteTask:
        """Send ``text`` (continuing ``task_id`` if given) and wait for the task to stop.

        Args:
            text: the message's text.
            task_id: the task to continue (answering its question), if any.
            context_id: the conversation (context) to send it in, if any.
        """
        task: RemoteTask | None = None
        async for event in self.stream(text, task_id=task_id, context_id=context_id):
            task = event.task
        if task is None:
            raise UserError(f"the agent at {self.url} answered without a task")
        return task

    async def stream(
        self, text: str, *, task_id: str | None = None, context_id: str | None = None
    ) -> AsyncIterator[RemoteEvent]:
        """Send ``text`` and yield the task's updates until it stops.

        Args:
            text: the message's text.
            task_id: the task to continue (answering its question), if any.
            context_id: the conversation (context) to send it in, if any.
        """
        message = A2AMessage(
            message_id=uuid.uuid4().hex,
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
            task_id=task_id or "",
            context_id=context_id or "",
        )
        tracker = _Tracker()
        async with self._http() as http:
            client = await self._client(http)
            async for response in client.send_message(SendMessageRequest(message=message)):
                event = tracker.fold(response)
                if event is not None:
                    yield event

    async def get_task(self, task_id: str) -> RemoteTask:
        """The remote task ``task_id`` as it stands.

        Args:
            task_id: the remote task's id.
        """
        async with self._http() as http:
            client = await self._client(http)
            tracker = _Tracker()
            tracker.whole(await client.get_task(GetTaskRequest(id=task_id)))
            return tracker.task()

    async def cancel(self, task_id: str) -> RemoteTask:
        """Cancel the remote task ``task_id``.

        Args:
            task_id: the remote task's id.
        """
        async with self._http() as http:
            client = await self._client(http)
            tracker = _Tracker()
            tracker.whole(await client.cancel_task(CancelTaskRequest(id=task_id)))
            return tracker.task()

    # --- as a tool ---------------------------------------------------------------------------

    def _context_for(self, ctx: ToolContext[Any]) -> str | None:
        if ctx.session_id is None:
            return None
        digest = hashlib.sha256(f"{self.url}\n{ctx.session_id}".encode()).hexdigest()[:32]
        return f"dive-{digest}"

    async def call(self, input: Any, ctx: ToolContext[Any]) -> ToolOutput:
        text = str(input["message"])
        task_id = input.get("task_id") or None
        context_id = None if task_id else self._context_for(ctx)
        task: RemoteTask | None = None
        async for event in self.stream(text, task_id=task_id, context_id=context_id):
            if event.type == "text" and event.text:
                await ctx.stream_output(event.text)
            task = event.task
        if task is None:
            return ToolReturn(content=f"the agent at {self.url} answered nothing", is_error=True)
        if task.needs_input:
            self._waiting[ctx.tool_call_id] = (task.id, task.context_id)
            reason = "auth_required" if task.state == "auth-required" else "input_required"
            prompt = task.status_text or f"The remote agent ({self.name}) needs more input."
            ref: dict[str, JSONValue] = {
                "url": self.url,
                "task_id": task.id,
                "context_id": task.context_id,
            }
            meta: dict[str, JSONValue] = {_KEY: ref}
            return Suspend(prompt, reason=reason, metadata=meta)
        return self._output(task)

    def _output(self, task: RemoteTask) -> ToolReturn | str:
        if task.state == "completed":
            return task.text or task.status_text
        if task.needs_input:
            return (
                f"The remote agent asks: {task.status_text} "
                f"(call {self.name} again with task_id={task.id!r} and the answer)"
            )
        detail = task.status_text or task.state
        kept = f"\n\nIts partial answer: {task.text}" if task.text else ""
        return ToolReturn(
            content=f"The remote task ended {task.state}: {detail}{kept}", is_error=True
        )

    # --- as an extension -------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        """This tool."""
        return [self]

    def hooks(self) -> Hooks:
        """The ``post_tool_use`` hook that forwards a resume's answer to the remote task."""
        return Hooks(post_tool_use=[self._forward])

    def rules(self) -> None:
        """No rules."""
        return None

    async def _waiting_task(self, ctx: HookContext[Any]) -> tuple[str, str] | None:
        call = ctx.call
        assert call is not None
        session = ctx.session
        if session is not None:
            snap = await session.load()
            turn = snap.open_turn
            if turn is not None and turn.suspension is not None:
                for pending in turn.suspension.pending_tool_calls:
                    ref = pending.metadata.get(_KEY)
                    if pending.id == call.id and isinstance(ref, Mapping):
                        return str(ref["task_id"]), str(ref["context_id"])  # pyright: ignore[reportUnknownArgumentType]
        return self._waiting.get(call.id)

    async def _forward(self, ctx: HookContext[Any]) -> None:
        call, answer = ctx.call, ctx.tool_result
        if call is None or answer is None or call.name != self.name:
            return
        ref = await self._waiting_task(ctx)
        if ref is None:
            return  # a call that ran, not an answer supplied on resume
        task_id, context_id = ref
        try:
            task = await self.send(answer.text, task_id=task_id, context_id=context_id)
        except Exception as exc:
            note = f"the answer could not reach the remote agent ({self.url}): {exc}"
            ctx.tool_result = _result(call.id, call.name, note, is_error=True)
            return
        self._waiting.pop(call.id, None)
        output = self._output(task)
        if isinstance(output, ToolReturn):
            ctx.tool_result = _result(call.id, call.name, str(output.content), is_error=True)
        else:
            ctx.tool_result = _result(call.id, call.name, output)


def _result(call_id: str, name: str, text: str, *, is_error: bool = False) -> ToolResult:
    return ToolResult(
        tool_call_id=call_id, name=name, content=(TextBlock(text=text),), is_error=is_error
    )
