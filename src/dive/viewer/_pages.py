"""The read-only routes: sessions list, inbox, session page, trace, export, events."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response, StreamingResponse

from dive.errors import UserError
from dive.sessions import validate_session_id
from dive.turns import IncompleteReason, Turn
from dive.viewer._app import Viewer
from dive.viewer._costs import ChartPoint, cost_chart
from dive.viewer._export import check_exportable, export_file_name, regression_test
from dive.viewer._inbox import needs_reconcile, pending_waits
from dive.viewer._listing import STATUS_FILTERS, session_rows
from dive.viewer._live import event_stream
from dive.viewer._trace import record_bars, span_bars, turn_model
from dive.viewer._views import turn_view

__all__ = ["events", "export", "inbox", "session_page", "sessions", "trace", "turn"]

REASONS: tuple[str, ...] = IncompleteReason.__args__  # pyright: ignore[reportAttributeAccessIssue]
_SCAN = 500


class NotFoundError(UserError):
    """A session or turn the store does not hold."""


def _viewer(request: Request) -> Viewer:
    return request.app.state.viewer


def _session_id(request: Request) -> str:
    return validate_session_id(request.path_params["session_id"])


async def _turns(viewer: Viewer, session_id: str) -> list[Turn]:
    turns = await viewer.store.turns(session_id)
    if not turns:
        raise NotFoundError(f"no session {session_id!r} in this store (or it has no turns yet)")
    return turns


def _find(turns: list[Turn], turn_id: str) -> tuple[int, Turn]:
    for i, t in enumerate(turns):
        if t.id == turn_id:
            return i, t
    raise NotFoundError(f"no turn {turn_id!r} in this session")


async def _common(viewer: Viewer, *, live: str) -> dict[str, Any]:
    waits = await pending_waits(viewer.store)
    return {"inbox_count": len(waits), "live": live}


async def sessions(request: Request) -> Response:
    """``GET /``: the sessions list."""
    viewer = _viewer(request)
    q = request.query_params
    status = q.get("status") or None
    reason = q.get("reason") or None
    if status is not None and status not in STATUS_FILTERS:
        raise UserError(f"unknown status filter {status!r}: use one of {', '.join(STATUS_FILTERS)}")
    if reason is not None and reason not in REASONS:
        raise UserError(f"unknown reason {reason!r}: use one of {', '.join(REASONS)}")
    rows = await session_rows(viewer.store, status=status, reason=reason, query=q.get("q"))
    context = await _common(viewer, live="/events")
    context.update(
        rows=rows,
        status=status,
        reason=reason,
        q=q.get("q", ""),
        statuses=STATUS_FILTERS,
        reasons=REASONS,
    )
    return viewer.render(request, "sessions.html", context)


async def inbox(request: Request) -> Response:
    """``GET /inbox``: every pending wait across sessions, and calls needing reconciliation."""
    viewer = _viewer(request)
    waits = await pending_waits(viewer.store)
    context = {
        "inbox_count": len(waits),
        "live": "/events",
        "waits": waits,
        "reconcile": await needs_reconcile(viewer.store),
    }
    return viewer.render(request, "inbox.html", context)


async def _subagents(viewer: Viewer, turns: list[Turn]) -> frozenset[str]:
    ids = {t.id for t in turns}
    found: set[str] = set()
    for info in await viewer.store.list(limit=_SCAN):
        head, dot, _ = info.id.partition(".")
        if dot and head in ids:
            found.add(info.id)
    return frozenset(found)


def _chart(turns: list[Turn]) -> str:
    points = [
        ChartPoint(
            label=str(i + 1),
            input_tokens=t.usage.total_input_tokens,
            output_tokens=t.usage.output_tokens,
            cost=t.usage.cost,
        )
        for i, t in enumerate(turns)
    ]
    return cost_chart(points)


async def session_page(request: Request) -> Response:
    """``GET /sessions/{id}``: the timeline of turns, the cost chart, actions and waits."""
    viewer = _viewer(request)
    session_id = _session_id(request)
    turns = await _turns(viewer, session_id)
    snap = await viewer.store.load(session_id)
    subagents = await _subagents(viewer, turns)
    spans = viewer.spans()
    views = [
        turn_view(
            t,
            i + 1,
            subagents=subagents,
            model=turn_model(spans, t.id) or viewer.model,
            spans=span_bars(spans, t.id) if spans else (),
        )
        for i, t in enumerate(turns)
    ]
    summaries = [m for m in snap.history if m.kind == "compaction_summary"]
    resumer = viewer.resumer
    context = await _common(viewer, live=f"/events?session={session_id}")
    context.update(
        session_id=session_id,
        turns=views,
        revision=snap.revision,
        chart=_chart(turns),
        summaries=summaries,
        waits=await pending_waits(viewer.store, session_id=session_id),
        running_here=resumer is not None and resumer.running(session_id),
        notice=resumer.notices.get(session_id) if resumer is not None else None,
        total=sum((t.usage for t in turns), start=turns[0].usage.ZERO),
    )
    return viewer.render(request, "session.html", context)


async def trace(request: Request) -> Response:
    """``GET /sessions/{id}/turns/{turn}/trace``: the turn's waterfall."""
    viewer = _viewer(request)
    session_id = _session_id(request)
    turns = await _turns(viewer, session_id)
    index, found = _find(turns, request.path_params["turn_id"])
    from_spans = span_bars(viewer.spans(), found.id)
    bars = from_spans or record_bars(found)
    total = max([b.start + b.seconds for b in bars] + [1e-9])
    context = await _common(viewer, live=f"/events?session={session_id}")
    context.update(
        session_id=session_id,
        turn=turn_view(found, index + 1),
        bars=bars,
        total=total,
        from_spans=bool(from_spans),
    )
    return viewer.render(request, "trace.html", context)


async def export(request: Request) -> Response:
    """``GET /sessions/{id}/turns/{turn}/export``: the turn as a pytest file (a download)."""
    viewer = _viewer(request)
    session_id = _session_id(request)
    turns = await _turns(viewer, session_id)
    index, found = _find(turns, request.path_params["turn_id"])
    check_exportable(found)
    text = regression_test(found, session_id=session_id, earlier=turns[:index])
    name = export_file_name(session_id, found)
    return PlainTextResponse(
        text,
        media_type="text/x-python",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


async def turn(request: Request) -> Response:
    """``GET /turns/{turn}``: redirect to the session holding the turn."""
    viewer = _viewer(request)
    turn_id = request.path_params["turn_id"]
    for info in await viewer.store.list(limit=_SCAN):
        if any(t.id == turn_id for t in await viewer.store.turns(info.id)):
            return RedirectResponse(f"/sessions/{info.id}#{turn_id}", status_code=303)
    raise NotFoundError(f"no stored session holds turn {turn_id!r}")


async def events(request: Request) -> Response:
    """``GET /events``: server-sent events when the session (or any session) changes."""
    viewer = _viewer(request)
    raw = request.query_params.get("session")
    session_id = validate_session_id(raw) if raw else None
    resumer = viewer.resumer

    async def fingerprint() -> object:
        running = resumer.count if resumer is not None else 0
        if session_id is not None:
            return ((await viewer.store.load(session_id)).revision, running)
        return (tuple((i.id, i.revision) for i in await viewer.store.list(limit=_SCAN)), running)

    stream = event_stream(
        fingerprint,
        viewer.changes,
        poll_interval=viewer.poll_interval,
        disconnected=request.is_disconnected,
    )
    return StreamingResponse(
        stream,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
