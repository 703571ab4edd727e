"""dive agents over A2A (extra ``a2a``): serve an agent, call remote agents.

``a2a_app(agent, store=...)`` serves an agent (Starlette ASGI, mountable in FastAPI);
``RemoteAgent(url)`` calls an A2A agent as a dive tool. Conventions: the dive session id is
the A2A context id; a task is a turn, kept in the session store; every ``message/send``
reply is a Task; a suspended turn is an ``input-required`` / ``auth-required`` task, and the
text of the next message to it becomes the pending call's result.
"""

try:
    import a2a as _a2a
    import google.protobuf as _google_protobuf
    import httpx as _httpx
    import starlette as _starlette
except ImportError as exc:  # pragma: no cover - depends on the install
    from dive.errors import MissingExtraError

    raise MissingExtraError(
        f"dive.a2a needs the a2a extra ({exc}): pip install 'dive-agents[a2a]'"
    ) from exc

from dive.a2a._app import a2a_app
from dive.a2a._card import agent_card
from dive.a2a._handler import DiveRequestHandler
from dive.a2a._remote import RemoteAgent, RemoteEvent, RemoteTask

del _a2a, _google_protobuf, _httpx, _starlette

__all__ = [
    "DiveRequestHandler",
    "RemoteAgent",
    "RemoteEvent",
    "RemoteTask",
    "a2a_app",
    "agent_card",
]

from dive._public import publish as _publish  # noqa: E402

_publish(__name__, globals(), __all__)
