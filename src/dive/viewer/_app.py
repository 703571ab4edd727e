"""``app(store, ...)``: the viewer as an ASGI application (Starlette, Jinja2 templates).

Routes (every one behind the token gate but ``/static``):

| route | what |
|---|---|
| ``GET /`` | the sessions list (``status``, ``reason``, ``q`` filters) |
| ``GET /inbox`` | every pending wait, and the calls needing reconciliation |
| ``GET /sessions/{id}`` | the session's turns as a timeline, its cost chart, its waits |
| ``GET /sessions/{id}/turns/{turn}/trace`` | the turn's waterfall |
| ``GET /sessions/{id}/turns/{turn}/export`` | the turn as a pytest file |
| ``GET /turns/{turn}`` | the session holding a turn (links from subagent turns) |
| ``GET /events`` | server-sent events (``?session=`` for one session) |
| ``POST /sessions/{id}/decide`` | approve, deny or answer a pending call |
| ``POST /sessions/{id}/fork`` | fork the session at a turn |
| ``POST /sessions/{id}/remove-last`` | remove the last turn |

Templates and assets ship inside the package (``templates/``, ``static/``): no CDN, no
build step; pages read fine without JavaScript, which only adds live updates.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from dive.errors import (
    DiveError,
    NoSuspendedTurnError,
    SaveRejectedError,
    ToolCallNotPendingError,
    UserError,
)
from dive.sessions import SessionStore
from dive.viewer._auth import TokenGate, csrf_token, new_token
from dive.viewer._costs import money
from dive.viewer._live import Changes
from dive.viewer._resume import AgentFactory, Resumer
from dive.viewer._trace import SpanRecord, load_spans
from dive.viewer._views import reconcile_advice

__all__ = ["Viewer", "app"]

HERE = Path(__file__).parent


def _age(value: datetime | None) -> str:
    if value is None:
        return "unknown"
    seconds = max(0, int((datetime.now(UTC) - value).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return f"{seconds} s ago"


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value is not None else "—"


def _secs(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(money=money, age=_age, when=_when, secs=_secs)
    return env


@dataclass(slots=True, kw_only=True)
class Viewer:
    """What every route shares: the store, the token, templates, resumes, live updates."""

    store: SessionStore
    token: str
    resumer: Resumer | None
    changes: Changes
    spans_path: Path | None = None
    model: str | None = None
    poll_interval: float = 1.0
    env: Environment = field(default_factory=_environment)

    @property
    def csrf(self) -> str:
        """The CSRF field of every form."""
        return csrf_token(self.token)

    def spans(self) -> list[SpanRecord]:
        """The exported spans (read again on every page: the file grows while turns run)."""
        return load_spans(self.spans_path) if self.spans_path is not None else []

    def render(
        self, request: Request, name: str, context: Mapping[str, Any], *, status: int = 200
    ) -> HTMLResponse:
        """A page from ``templates/name``, with what every page needs."""
        page = self.env.get_template(name).render(
            request=request,
            csrf=self.csrf,
            agent=self.resumer is not None,
            advice=reconcile_advice,
            **context,
        )
        return HTMLResponse(page, status_code=status, headers={"Cache-Control": "no-store"})


def _status(exc: DiveError) -> int:
    from dive.viewer._actions import CsrfError
    from dive.viewer._pages import NotFoundError

    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, CsrfError):
        return 403
    if isinstance(exc, SaveRejectedError | ToolCallNotPendingError | NoSuspendedTurnError):
        return 409
    return 400 if isinstance(exc, UserError) else 500


async def _error(request: Request, exc: Exception) -> Response:
    """A refused or failed request as a page saying what happened and what to do."""
    assert isinstance(exc, DiveError)
    viewer: Viewer = request.app.state.viewer
    status = _status(exc)
    context = {"status": status, "message": str(exc), "inbox_count": None, "live": None}
    return viewer.render(request, "error.html", context, status=status)


def app(
    store: SessionStore,
    *,
    token: str | None = None,
    agent_factory: AgentFactory | None = None,
    spans: str | Path | None = None,
    model: str | None = None,
    poll_interval: float = 1.0,
) -> Starlette:
    """The viewer over ``store`` as an ASGI app.

    Args:
        store: any session store (opened by the caller; ``serve`` opens and closes it).
        token: the access token (None: a random one, at ``app.state.viewer.token``).
            Requests carry it as ``?token=`` (then a cookie) or ``Authorization: Bearer``.
        agent_factory: ``factory(session_id) -> Agent`` bound to that session of the store
            (or an awaitable of one). With it, a decision resumes the turn in this
            process; without it, the decision is recorded for the owning process.
        spans: a file of exported OpenTelemetry spans (JSON) for the trace view.
        model: ``provider:model`` to price the ideal-caching comparison when spans do not
            name the model.
        poll_interval: seconds between looks at the store for live updates.
    """
    from dive.viewer._actions import decide, fork, remove_last
    from dive.viewer._pages import events, export, inbox, session_page, sessions, trace, turn

    changes = Changes()
    viewer = Viewer(
        store=store,
        token=token or new_token(),
        resumer=Resumer(agent_factory, changes) if agent_factory is not None else None,
        changes=changes,
        spans_path=Path(spans) if spans is not None else None,
        model=model,
        poll_interval=poll_interval,
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncGenerator[None]:
        yield
        if viewer.resumer is not None:
            await viewer.resumer.aclose()

    routes = [
        Route("/", sessions),
        Route("/inbox", inbox),
        Route("/events", events),
        Route("/turns/{turn_id}", turn),
        Route("/sessions/{session_id}", session_page),
        Route("/sessions/{session_id}/turns/{turn_id}/trace", trace),
        Route("/sessions/{session_id}/turns/{turn_id}/export", export),
        Route("/sessions/{session_id}/decide", decide, methods=["POST"]),
        Route("/sessions/{session_id}/fork", fork, methods=["POST"]),
        Route("/sessions/{session_id}/remove-last", remove_last, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    web = Starlette(routes=routes, lifespan=lifespan, exception_handlers={DiveError: _error})
    web.state.viewer = viewer
    web.add_middleware(TokenGate, token=viewer.token)
    return web
