"""dive agents for AG-UI front ends (extra ``a2a``, which brings ``ag-ui-protocol``).

``agui_app(agent, store=...)`` streams a run as AG-UI events: text, tool calls, state
snapshots, and approvals or questions as interrupts answered by the next run's ``resume``.
"""

try:
    import ag_ui as _ag_ui
    import starlette as _starlette
except ImportError as exc:  # pragma: no cover - depends on the install
    from dive.errors import MissingExtraError

    raise MissingExtraError(
        f"dive.agui needs the a2a extra ({exc}): pip install 'dive-agents[a2a]'"
    ) from exc

from dive.agui._app import agui_app
from dive.agui._events import APPROVAL_SCHEMA

del _ag_ui, _starlette

__all__ = ["APPROVAL_SCHEMA", "agui_app"]

from dive._public import publish as _publish  # noqa: E402

_publish(__name__, globals(), __all__)
