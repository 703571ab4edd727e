"""The write routes: decide (approve / deny / answer), fork at a turn, remove the last turn.

Each reads the posted form and checks its CSRF field first (a request authorised by an
``Authorization: Bearer`` header needs none); a post that fails the check changes nothing.
On success each answers ``303 See Other`` back to the page the form came from.

A decision names its session, turn and call. With an agent factory the turn is resumed in
this process with it (plus any decisions recorded earlier for the same turn); without one it
is recorded for the owning process (``record_decision``). Both refuse a call that is not
waiting in that turn, and a different decision than one already made.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from dive.errors import ConflictingToolResultError, NoTurnError, UserError
from dive.messages import JSONValue
from dive.sessions import validate_session_id
from dive.viewer._app import Viewer
from dive.viewer._forms import decision_from_form, parse_form
from dive.viewer._inbox import (
    Wait,
    check_pending,
    decision_json,
    merge_recorded,
    record_decision,
    wait_kind,
)

__all__ = ["CsrfError", "decide", "fork", "remove_last"]


class CsrfError(UserError):
    """A form post without the viewer's CSRF field."""


async def _form(request: Request, viewer: Viewer) -> dict[str, str]:
    form = parse_form(await request.body())
    if request.scope.get("state", {}).get("auth") == "bearer":
        return form
    if not hmac.compare_digest(form.get("csrf", "").encode(), viewer.csrf.encode()):
        raise CsrfError("the form lacks the viewer's CSRF field; reload the page and try again")
    return form


def _back(form: dict[str, str], session_id: str, anchor: str = "") -> RedirectResponse:
    target = "/inbox" if form.get("back") == "inbox" else f"/sessions/{session_id}"
    return RedirectResponse(target + anchor, status_code=303)


async def decide(request: Request) -> Response:
    """``POST /sessions/{id}/decide``: approve, deny or answer a pending call."""
    viewer: Viewer = request.app.state.viewer
    session_id = validate_session_id(request.path_params["session_id"])
    form = await _form(request, viewer)
    turn_id, call_id = form.get("turn_id", ""), form.get("call_id", "")
    snap = await viewer.store.load(session_id)
    pending = check_pending(snap, turn_id, call_id)
    wait = Wait(
        session_id=session_id,
        turn_id=turn_id,
        revision=snap.revision,
        call=pending,
        kind=wait_kind(pending),
        since=None,
    )
    value = decision_from_form(wait, form)
    resumer = viewer.resumer
    if resumer is None:
        await record_decision(
            viewer.store, session_id, turn_id=turn_id, call_id=call_id, value=value
        )
    else:
        assert snap.open_turn is not None
        suspension = snap.open_turn.suspension
        earlier: Mapping[str, JSONValue] = suspension.accepted if suspension is not None else {}
        if call_id in earlier and earlier[call_id] != decision_json(value):
            raise ConflictingToolResultError(
                f"a different result for tool call {call_id!r} was already accepted"
            )
        resumer.start(session_id, turn_id, merge_recorded(snap.open_turn, call_id, value))
    viewer.changes.bump()
    return _back(form, session_id, f"#{turn_id}")


async def fork(request: Request) -> Response:
    """``POST /sessions/{id}/fork``: a new session holding the turns up to ``turn_id``.

    The fork copies the session (an open turn closed, as ``fork`` closes it), then removes
    the turns after the chosen one; a compaction after it cannot be removed and is refused.
    """
    viewer: Viewer = request.app.state.viewer
    session_id = validate_session_id(request.path_params["session_id"])
    form = await _form(request, viewer)
    turn_id = form.get("turn_id", "")
    new_id = validate_session_id(form.get("new_id") or f"{session_id}.fork-{turn_id[-6:]}")
    turns = await viewer.store.turns(session_id)
    ids = [t.id for t in turns]
    if turn_id not in ids:
        raise UserError(f"no turn {turn_id!r} in session {session_id!r}; nothing was forked")
    keep = ids.index(turn_id) + 1
    await viewer.store.fork(session_id, new_id, include_open_turn=True)
    try:
        for _ in range(len(ids) - keep):
            await viewer.store.remove_last_turn(new_id)
    except NoTurnError:
        await viewer.store.delete(new_id)
        raise NoTurnError(
            f"the session was compacted after turn {turn_id}; fork from a later turn"
        ) from None
    viewer.changes.bump()
    return RedirectResponse(f"/sessions/{new_id}", status_code=303)


async def remove_last(request: Request) -> Response:
    """``POST /sessions/{id}/remove-last``: delete the last turn (guarded by the revision)."""
    viewer: Viewer = request.app.state.viewer
    session_id = validate_session_id(request.path_params["session_id"])
    form = await _form(request, viewer)
    raw = form.get("revision", "")
    revision = int(raw) if raw.isdigit() else None
    await viewer.store.remove_last_turn(session_id, expected_revision=revision)
    viewer.changes.bump()
    return _back(form, session_id)
