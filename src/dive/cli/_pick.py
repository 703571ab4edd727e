"""Which session a command continues: ``--session ID``, ``--continue``, ``--resume ID`` or new.

``--session ID`` uses that session and creates it when it does not exist; ``--resume ID``
requires it to exist; ``--continue`` takes the most recently updated one; with none of them
a new session gets a fresh id (``dive-<date>-<time>-<hex>``), shown so it can be resumed.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime

from dive.cli._errors import EXIT_USAGE, CliError
from dive.errors import UserError
from dive.sessions import Session, SessionStore, validate_session_id

__all__ = ["Picked", "new_session_id", "pick_session", "session_exists"]


def new_session_id() -> str:
    """A fresh session id: ``dive-20250101-120000-1a2b``."""
    return f"dive-{datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


async def session_exists(store: SessionStore, session_id: str) -> bool:
    """True when the store holds a turn (or a compaction) of ``session_id``."""
    return (await store.load(session_id)).revision > 0


@dataclass(frozen=True, slots=True)
class Picked:
    """The session a command runs in, and whether it is new."""

    session: Session
    new: bool


def _valid(session_id: str, flag: str) -> str:
    try:
        return validate_session_id(session_id)
    except UserError as exc:
        raise CliError(f"{flag}: {exc}", EXIT_USAGE) from None


async def pick_session(
    store: SessionStore,
    *,
    session: str | None = None,
    continue_last: bool = False,
    resume: str | None = None,
    db: str = "the sessions database",
) -> Picked:
    """The session the flags name (see the module docstring).

    Raises:
        CliError: more than one of the flags, an invalid id, a ``--resume`` id that is not
            stored, or nothing to ``--continue`` (usage errors).
    """
    if (session is not None) + (resume is not None) + continue_last > 1:
        raise CliError("use only one of --session, --continue and --resume", EXIT_USAGE)
    if session is not None:
        sid = _valid(session, "--session")
        return Picked(store.session(sid), not await session_exists(store, sid))
    if resume is not None:
        sid = _valid(resume, "--resume")
        if not await session_exists(store, sid):
            raise CliError(
                f"--resume {sid}: no such session in {db}; `dive sessions list` shows them "
                "(--session ID creates one)",
                EXIT_USAGE,
            )
        return Picked(store.session(sid), False)
    if continue_last:
        rows = await store.list(limit=1)
        if not rows:
            raise CliError(f"--continue: there is no session in {db} yet", EXIT_USAGE)
        return Picked(store.session(rows[0].id), False)
    return Picked(store.session(new_session_id()), True)
