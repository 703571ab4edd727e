"""What crosses Temporal: references, and what one effect added — never the conversation.

Every activity gets a :class:`Ref` (session id, turn id, the revision the store holds, the
step) and reads what it needs from dive's session store; what it returns is what that one
effect produced (a model response, a tool outcome, a new revision). So a workflow's history
grows with the turn's steps, not with the session's tokens. dive records travel as JSON text
made by dive's own codec.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "LiveTurn",
    "ModelInput",
    "ModelOutput",
    "Ref",
    "Settled",
    "StoreInput",
    "StoreOutput",
    "TextChunk",
    "ToolInput",
    "ToolsetInput",
    "TurnInput",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Ref:
    """Where an effect happens: the session, the turn, the revision of its last write."""

    session_id: str
    turn_id: str
    revision: int
    step: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInput:
    """One model request by reference.

    The request's first ``prefix`` messages are the stored history and the stored turn's
    messages at ``ref.revision``; ``request_json`` holds the rest of the request (system
    prompt, tools, settings, the messages after that prefix). Tools named in
    ``static_tools`` are the agent's own definitions (the worker has them) and lead the
    request's tools; ``static_system`` means the system prompt is the agent's static one.
    """

    ref: Ref
    prefix: int
    request_json: str
    static_tools: tuple[str, ...] = ()
    static_system: bool = False
    count_only: bool = False
    live_text: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelOutput:
    """The response (or the token count), or the failure the provider reported."""

    response_json: str | None = None
    tokens: int | None = None
    error_type: str | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInput:
    """One tool call by reference: its arguments are in the stored running turn."""

    ref: Ref
    call_id: str
    name: str
    toolset: str | None = None
    deps_json: str | None = None
    resumed_json: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolsetInput:
    """List one of the agent's toolsets on a worker."""

    ref: Ref
    toolset: str
    deps_json: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreInput:
    """One session store operation.

    ``write``: ``patch_json`` is the turn record as a patch of the stored open turn (the
    messages after the first ``keep`` stored ones, the call records that changed).
    """

    op: Literal["load", "load_turns", "write", "claim", "renew_claim", "release_claim"]
    session_id: str
    expected_revision: int = 0
    patch_json: str | None = None
    owner: str = ""
    ttl: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreOutput:
    """What a store operation read (JSON text) or the revision a write produced."""

    json: str | None = None
    revision: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Settled:
    """Where a turn came to rest, as stored: suspended, completed or incomplete.

    ``revision`` is the session revision of the stored record; ``output_json`` the accepted
    output as JSON (the record itself is the store's).
    """

    session_id: str
    turn_id: str
    status: Literal["completed", "suspended", "incomplete"]
    revision: int
    stop_reason: str | None = None
    model: str | None = None
    output_json: str | None = None
    has_output: bool = False
    error_type: str | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TextChunk:
    """Live text of a model call.

    ``step`` is the turn's model call it belongs to and ``attempt`` the activity attempt: a
    retried attempt (its worker was lost) starts its text over, so a reader drops what the
    earlier attempt of the same step sent.

    Attributes:
        step: The turn's model call (0-based) the text belongs to.
        attempt: The activity attempt that produced it (1 for the first try).
        text: The text received, in order.
    """

    step: int
    attempt: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveTurn:
    """The ``dive.turn`` query: where the workflow's turn stands right now.

    Attributes:
        session_id: The session the turn belongs to.
        turn_id: The turn's id in the session store.
        status: ``running`` while the loop works, else how the turn last settled.
        step: The number of model calls the turn has made so far.
        revision: The stored turn's revision the workflow last wrote.
        running_calls: Ids of the tool calls whose activities are running now.
        settled_count: How many times the turn has settled (suspensions included).
    """

    session_id: str
    turn_id: str
    status: Literal["running", "suspended", "completed", "incomplete"]
    step: int
    revision: int
    running_calls: tuple[str, ...] = ()
    settled_count: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnInput:
    """The workflow's argument: the turn to run, or a suspended turn carried over.

    ``settled`` is what the turn settled as before a continue-as-new (the last one is the
    suspension the new run waits on).
    """

    session_id: str
    input_json: str | None = None
    deps_json: str | None = None
    live_text: bool = False
    max_history_events: int = 20_000
    heartbeat_timeout: float = 30.0
    settled: tuple[Settled, ...] = field(default=())
