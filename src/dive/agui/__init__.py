"""dive agents for AG-UI front ends (extra ``a2a``, which brings ``ag-ui-protocol``).

``agui_app(agent, store=...)`` streams a run as AG-UI events: text, tool calls, state
snapshots, and approvals or questions as interrupts answered by the next run's ``resume``.
"""

from dive.agui._app import agui_app
from dive.agui._events import APPROVAL_SCHEMA

__all__ = ["APPROVAL_SCHEMA", "agui_app"]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
