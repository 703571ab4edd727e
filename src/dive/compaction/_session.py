"""``compact_session``: compact a session's history and record it in the session.

The compaction is one entry of the session log: ``load()`` then returns the compacted view
(the kept head, the summary, the kept tail, and every later turn), while ``turns()`` still
returns every original record. It runs under the session's in-process lock, so it never
interleaves with a run of this process on the same session (calling it from inside such a
run raises ``ReentrantSessionError``). A suspended or running open turn is refused before
the summariser is asked; an incomplete one is compacted with the rest (its outcome stays
the session's latest outcome).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from dive.compaction._compact import CompactionResult, compact_messages
from dive.errors import SaveRejectedError, SuspendedSessionError
from dive.llm import Model
from dive.messages import Message
from dive.sessions import Session, SessionSnapshot, session_lock

__all__ = ["check_compactable", "compact_session", "record"]


def check_compactable(snap: SessionSnapshot) -> None:
    """Raise when the session's open turn may not be hidden by a compaction."""
    turn = snap.open_turn
    if turn is None or turn.status == "incomplete":
        return
    if turn.status == "suspended":
        raise SuspendedSessionError(
            f"the session's turn {turn.id} is suspended: resume it with tool_results= or close "
            "it with cancel_suspended_turn() before compacting; nothing was changed"
        )
    raise SaveRejectedError(
        f"the session's turn {turn.id} is running: compact after it ends; nothing was changed"
    )


def history_of(snap: SessionSnapshot) -> list[Message]:
    """The history a compaction of this snapshot covers (an incomplete open turn included)."""
    out = list(snap.history)
    if snap.open_turn is not None:
        out.extend(snap.open_turn.messages)
    return out


async def record(session: Session, result: CompactionResult) -> CompactionResult:
    """Write ``result`` to ``session``; the result with the revision it landed at."""
    assert result.summary is not None
    revision = await session.compact(result.summary, head=result.head, tail=result.tail)
    return replace(result, revision=revision)


async def compact_session(
    session: Session,
    model: Model,
    *,
    keep_recent_tokens: int | None = None,
    keep_first: bool = True,
    instructions: str | None = None,
    max_input_tokens: int | None = None,
    max_summary_tokens: int | None = None,
    system: str = "",
    tools: Sequence[Any] = (),
) -> CompactionResult:
    """Summarise ``session``'s history with ``model`` and record the compaction in it.

    Args:
        session: the session (``store.session(id)``).
        model: the summariser (the CLI passes the agent's model).
        keep_recent_tokens: about how many tokens of recent messages stay verbatim
            (default 20,000).
        keep_first: keep the first exchange verbatim.
        instructions: the summariser's system prompt.
        max_input_tokens: the most one summariser request may carry (default 150,000).
        max_summary_tokens: the summary's output limit (default 8,000).
        system: the agent's system prompt, counted in the token figures.
        tools: the agent's tool definitions, counted in the token figures.

    Returns:
        The :class:`CompactionResult` with ``revision`` set, or unchanged (``changed``
        False, nothing written) when there was nothing to compact.

    Raises:
        SuspendedSessionError: the session's open turn is suspended.
        SaveRejectedError: the session's open turn is running.
        ReentrantSessionError: called from inside a run on the same session.
        ProviderError: the summariser's request failed (nothing written).
    """
    options: dict[str, Any] = {
        k: v
        for k, v in {
            "keep_recent_tokens": keep_recent_tokens,
            "max_input_tokens": max_input_tokens,
            "max_summary_tokens": max_summary_tokens,
        }.items()
        if v is not None
    }
    async with session_lock(session.id):
        snap = await session.load()
        check_compactable(snap)
        result = await compact_messages(
            model,
            history_of(snap),
            keep_first=keep_first,
            instructions=instructions,
            system=system,
            tools=tools,
            **options,
        )
        if not result.changed:
            return result
        return await record(session, result)
