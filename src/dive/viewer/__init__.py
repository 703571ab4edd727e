"""A local web viewer over a session store, and one inbox for every human wait.

``app(store, token=None, agent_factory=None)`` is the viewer as an ASGI app (Starlette and
Jinja2, the ``viewer`` extra); ``serve(store, host=..., port=..., agent_factory=...)`` runs it
with uvicorn and prints its URL with the access token (``dive serve`` calls it). Pages: the
sessions list, a session's turns as a timeline (states, reasons, usage, cost, a cost chart),
a turn's trace, and the inbox of pending waits, answerable from the page.

The inbox's pieces work without the extra, for the process that owns a session: the viewer
run without an agent records decisions in the store (``record_decision``), and that process
applies them with ``apply_recorded_decisions(agent)``. ``regression_test`` writes a stored
turn as a pytest file.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from dive.errors import MissingExtraError as _MissingExtraError
from dive.viewer._export import regression_test
from dive.viewer._inbox import (
    DECISION_KEY,
    Reconcile,
    Wait,
    apply_recorded_decisions,
    needs_reconcile,
    pending_waits,
    record_decision,
    recorded_decisions,
)

if _TYPE_CHECKING:
    from dive.viewer._app import app
    from dive.viewer._serve import serve

_EXTRA = "the dive viewer needs its extra: pip install 'dive-agents[viewer]'"


def __getattr__(name: str) -> _Any:
    # the web parts need starlette, jinja2 and uvicorn (the viewer extra): import them on use
    if name not in ("app", "serve"):
        raise AttributeError(name)
    try:
        if name == "app":
            from dive.viewer._app import app as found
        else:
            from dive.viewer._serve import serve as found
    except ImportError as exc:
        raise _MissingExtraError(f"{_EXTRA} ({exc})") from None
    return found


__all__ = [
    "DECISION_KEY",
    "Reconcile",
    "Wait",
    "app",
    "apply_recorded_decisions",
    "needs_reconcile",
    "pending_waits",
    "record_decision",
    "recorded_decisions",
    "regression_test",
    "serve",
]

from dive._public import publish as _publish  # noqa: E402

_publish(__name__, globals(), [n for n in __all__ if n not in ("app", "serve")])
