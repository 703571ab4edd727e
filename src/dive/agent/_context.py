"""``RunContext``: what instructions functions and output validators see."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic

from typing_extensions import TypeVar

from dive.messages import Message

__all__ = ["RunContext"]

DepsT = TypeVar("DepsT", default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunContext(Generic[DepsT]):
    """The invocation as a dynamic instruction or an output validator sees it.

    Annotate with the agent's dependency type to get ``ctx.deps`` typed:
    ``def instructions(ctx: RunContext[MyDeps]) -> str``.

    Attributes:
        deps: what the run was given as ``deps=`` (typed by ``Agent(deps_type=...)``).
        values: the invocation's shared untyped values (``run(values=...)``).
        turn_id: the turn's id.
        session_id: the session's id (None when stateless).
        agent_name: the agent's name.
        iteration: the zero-based model call of the turn this is for.
        messages: the model-facing messages so far.
        output_retries_used: failed output attempts so far (validators).
    """

    deps: DepsT
    values: dict[str, Any]
    turn_id: str
    session_id: str | None
    agent_name: str | None
    iteration: int
    messages: tuple[Message, ...]
    output_retries_used: int = 0
