"""``TemporalAgent``: an unchanged ``Agent`` run durably on Temporal, by reference.

``worker()`` hosts the turn workflow (the agent's loop, with the Temporal runner as its I/O
seam) and the activities that carry its effects; ``run()`` and ``start()`` start a turn's
workflow and read its results from the shared session store.
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any, Generic, TypeVar, cast

from pydantic import TypeAdapter
from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from dive.agent import Agent, Durability, RunResult
from dive.errors import UserError
from dive.messages import ContentBlock, Message, messages_to_json
from dive.sessions import SessionStore, validate_session_id
from dive.temporal import _activities
from dive.temporal._converter import DEFAULT_MAX_PAYLOAD_BYTES, check_payload
from dive.temporal._handle import TemporalTurnHandle
from dive.temporal._names import Names, names_for
from dive.temporal._registry import register
from dive.temporal._wire import TurnInput
from dive.temporal._workflow import DiveTurnWorkflow

__all__ = ["TemporalAgent"]

OutputT = TypeVar("OutputT")
DepsT = TypeVar("DepsT")

Prompt = str | Message | Sequence[Message] | Sequence[ContentBlock]

SANDBOX = SandboxRestrictions.default.with_passthrough_modules(
    "dive", "jsonschema", "genai_prices", "griffe"
)
"""The workflow sandbox: Temporal's defaults, with dive's modules passed through (imported
once per process, not once per workflow; the loop's effects all go through the runner), and
the libraries dive imports on first use (schema checks, prices, docstrings)."""


def _input_json(prompt: Prompt | None) -> str | None:
    if prompt is None:
        return None
    if isinstance(prompt, str):
        return messages_to_json([Message.user(prompt)])
    if isinstance(prompt, Message):
        return messages_to_json([prompt])
    items: list[Any] = list(prompt)
    if all(isinstance(m, Message) for m in items):
        return messages_to_json(items)
    return messages_to_json([Message(role="user", content=tuple(items))])


class TemporalAgent(Generic[OutputT, DepsT]):
    """An ``Agent`` whose turns run as Temporal workflows, on workers sharing one store.

    Args:
        agent: the agent, unchanged: its loop runs in the workflow, each effect (model call,
            tool call, toolset listing, store read or write) as an activity. Its hooks,
            instructions functions and approval policy run in workflow code, so they must
            be deterministic (no I/O, no clock of their own).
        name: stable compatibility data: the workflow and activity names derive from it
            (``dive.<name>.turn``, ``.model``, ``.tool``, ``.toolset``, ``.store``); changing
            it strands the workflows started under the old name.
        store: the session store every worker and client shares (PostgreSQL, or SQLite on
            one machine); it holds the turns, Temporal only references them.
        heartbeat_timeout: how soon a dead worker is noticed: every activity heartbeats
            three times within it.
        max_payload_bytes: the largest start payload, and tool result, a turn may carry
            (Temporal's blob limit: 2 MiB by default).
        max_history_events: a suspended turn's workflow continues as new past this many
            history events (or when Temporal suggests it).
    """

    def __init__(
        self,
        agent: Agent[OutputT, DepsT],
        *,
        name: str,
        store: SessionStore,
        heartbeat_timeout: timedelta = timedelta(seconds=30),
        max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
        max_history_events: int = 20_000,
    ) -> None:
        try:
            self.names: Names = names_for(name)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        if heartbeat_timeout <= timedelta(0):
            raise UserError("heartbeat_timeout must be positive")
        self.agent = agent
        self.name = name
        self.store = store
        self.heartbeat_timeout = heartbeat_timeout
        self.max_payload_bytes = max_payload_bytes
        self.max_history_events = max_history_events
        workflow_agent = copy.copy(agent)
        workflow_agent.durability = Durability(checkpoint_steps=True, claim=False)
        # each write is a local activity bounded by its own timeout; a timer raced against a
        # local activity is not replayed as it ran, so the loop's save timeout is off here
        no_timeout = cast(float, None)
        workflow_agent.incomplete_turns = replace(agent.incomplete_turns, save_timeout=no_timeout)
        self.workflow_agent: Agent[OutputT, DepsT] = workflow_agent
        """The agent the workflow runs: every step checkpointed (activities read the turn
        back by reference), no claims (the workflow id is the session's lock)."""

    def worker(self, client: Client, *, task_queue: str, **worker_options: Any) -> Worker:
        """A Temporal worker with the turn workflow, the activities and dive's data converter.

        Args:
            client: a client from ``dive.temporal.connect`` (dive's data converter).
            task_queue: the task queue to poll.
            **worker_options: passed to ``temporalio.worker.Worker`` (concurrency limits,
                identity, …).
        """
        _check_client(client)
        register(self.name, self)
        shared = _activities.Worker(
            agent=self.agent, store=self.store, max_payload_bytes=self.max_payload_bytes
        )
        worker_options.setdefault("workflow_runner", SandboxedWorkflowRunner(restrictions=SANDBOX))
        return Worker(
            client,
            task_queue=task_queue,
            workflows=[DiveTurnWorkflow],
            activities=_activities.activities(shared, self.names),
            **worker_options,
        )

    async def run(
        self,
        prompt: Prompt | None = None,
        *,
        client: Client,
        task_queue: str,
        session_id: str | None = None,
        deps: DepsT | None = None,
        live_text: bool = False,
    ) -> RunResult[OutputT]:
        """Run one turn on the workers of ``task_queue``; returns once it is stored.

        Takes ``start``'s arguments. A suspended or incomplete turn is a returned
        ``RunResult``, never raised; resume a suspended one through ``start(...)``'s handle
        (or ``handle(client, session_id)``), or with ``agent.run(tool_results=...)`` on the
        same store in any process.

        Args:
            prompt: The user's message for this turn (``None`` to continue the session).
            client: A client from ``connect`` (dive's data converter).
            task_queue: The task queue the workers of ``worker(...)`` poll.
            session_id: The session to run in; a new one when ``None``.
            deps: The run's dependencies, sent to the workers as JSON (validated as the
                agent's ``deps_type``).
            live_text: Send the model's text to the workflow as it streams (read it with
                the handle's ``text()``); off by default, since it adds to the history.

        Returns:
            The settled turn's result, read from the store.
        """
        handle = await self.start(
            prompt,
            client=client,
            task_queue=task_queue,
            session_id=session_id,
            deps=deps,
            live_text=live_text,
        )
        return await handle.result()

    async def start(
        self,
        prompt: Prompt | None = None,
        *,
        client: Client,
        task_queue: str,
        session_id: str | None = None,
        deps: DepsT | None = None,
        live_text: bool = False,
    ) -> TemporalTurnHandle[OutputT]:
        """Start one turn's workflow and return its handle.

        Args:
            prompt: the user's message: text, a ``Message``, messages or content blocks.
            client: a client from ``dive.temporal.connect``.
            task_queue: the task queue the workers poll.
            session_id: the session (a new one when omitted); one turn workflow per session
                at a time.
            deps: the run's ``deps``: JSON-serialisable (a pydantic model, a dataclass, plain
                data), validated as the agent's ``deps_type`` where it is used.
            live_text: send the answer's text to the workflow as it streams (read it with
                ``handle.text()``).

        Raises:
            UserError: the start payload is unserialisable or over ``max_payload_bytes``, or
                the session already has a turn workflow running.
        """
        _check_client(client)
        sid = validate_session_id(session_id) if session_id else f"s_{secrets.token_hex(12)}"
        turn = TurnInput(
            session_id=sid,
            input_json=_input_json(prompt),
            deps_json=self._deps_json(deps),
            live_text=live_text,
            max_history_events=self.max_history_events,
            heartbeat_timeout=self.heartbeat_timeout.total_seconds(),
        )
        await check_payload(
            client.data_converter, turn, what="the turn's input", limit=self.max_payload_bytes
        )
        workflow_id = self.names.workflow_id(sid)
        try:
            await client.start_workflow(
                self.names.workflow,
                turn,
                id=workflow_id,
                task_queue=task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                # a worker lost during a workflow task (or a store write in it) is noticed as
                # soon as one lost during an activity
                task_timeout=min(self.heartbeat_timeout, timedelta(seconds=10)),
            )
        except WorkflowAlreadyStartedError:
            raise UserError(
                f"session {sid} already has a turn running in workflow {workflow_id}; wait for "
                "its result, resume it, or cancel it"
            ) from None
        return TemporalTurnHandle(self, client, workflow_id, sid)

    def handle(self, client: Client, session_id: str) -> TemporalTurnHandle[OutputT]:
        """The handle of the turn workflow of ``session_id`` (from any process).

        Args:
            client: A client from ``connect``.
            session_id: The session whose turn workflow to address.
        """
        return TemporalTurnHandle(self, client, self.names.workflow_id(session_id), session_id)

    def decode_deps(self, text: str | None) -> Any:
        """``deps`` as sent to the workflow, validated as the agent's ``deps_type``.

        Args:
            text: The JSON the client sent, or ``None`` when the run has no deps.
        """
        if text is None:
            return None
        tp = self.agent.deps_type
        return TypeAdapter(Any if tp is None else tp).validate_json(text)

    def _deps_json(self, deps: object) -> str | None:
        if deps is None:
            return None
        tp = self.agent.deps_type
        adapter: TypeAdapter[Any] = TypeAdapter(Any if tp is None else tp)
        try:
            return adapter.dump_json(deps).decode()
        except Exception as exc:
            raise UserError(
                f"deps of type {type(deps).__name__} cannot be serialised for Temporal workers "
                f"({type(exc).__name__}); pass a pydantic model, a dataclass or plain data and "
                "keep live objects (clients, connections) on the worker"
            ) from exc


def _check_client(client: Client) -> None:
    if not issubclass(client.data_converter.payload_converter_class, PydanticPayloadConverter):
        raise UserError(
            "this Temporal client does not use dive's data converter; connect with "
            "dive.temporal.connect(...)"
        )
