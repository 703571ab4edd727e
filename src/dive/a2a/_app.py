"""``a2a_app``: a dive agent as an A2A server, a plain Starlette ASGI app.

Routes: ``GET /.well-known/agent-card.json`` (the card) and ``POST /`` (JSON-RPC: the
A2A 1.0 methods ``SendMessage``, ``SendStreamingMessage``, ``GetTask``, ``ListTasks``,
``CancelTask``, ``SubscribeToTask``, and the 0.3 names ``message/send``,
``message/stream``, ``tasks/get``, ``tasks/cancel``, ``tasks/resubscribe``). Mount it
anywhere (``fastapi_app.mount("/agents/support", a2a_app(...))``): with ``card=None`` the
card's URL is the URL the card was fetched under.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import AgentCard
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from dive.a2a._card import agent_card, with_url
from dive.a2a._handler import DiveRequestHandler
from dive.agent import Agent
from dive.sessions import SessionStore

__all__ = ["a2a_app"]


def _endpoint(request: Request) -> str:
    """The URL this app answers at: the request's host, behind any mount or root path."""
    root = str(request.scope.get("root_path", "")).rstrip("/")
    return str(request.url.replace(path=root + "/", query="", fragment=""))


def a2a_app(
    agent: Agent[Any, Any], *, store: SessionStore, card: AgentCard | None = None
) -> Starlette:
    """Serve ``agent`` over A2A (JSON-RPC and streaming), its tasks kept in ``store``.

    Each A2A context is a dive session of ``store`` (the context id *is* the session id)
    and each task a turn of it, so every process serving the same store continues the same
    tasks, and task ids survive a restart. A suspended turn is an ``input-required`` (or
    ``auth-required``) task whose status message is the pending call's prompt; the next
    message to the task answers it.

    Args:
        agent: the agent to serve (its ``session=`` is not used: each context is one).
        store: the session store of every context (an opened ``SQLiteSessionStore`` or
            ``PostgresSessionStore`` for more than one process).
        card: the agent card to serve (see ``agent_card``); None builds it from the agent,
            its URL from each request. A given card without a JSON-RPC interface gets the
            request's URL too.

    Returns:
        A Starlette app; on shutdown it cancels the runs still going (they are written as
        canceled tasks).
    """
    handler = DiveRequestHandler(agent, store)
    dispatcher = JsonRpcDispatcher(request_handler=handler, enable_v0_3_compat=True)
    base = card if card is not None else agent_card(agent)

    async def get_card(request: Request) -> JSONResponse:
        served = base
        if not any(i.url and i.protocol_binding == "JSONRPC" for i in base.supported_interfaces):
            served = with_url(base, _endpoint(request))
        return JSONResponse(agent_card_to_dict(served))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        try:
            yield
        finally:
            await handler.aclose()

    routes = [
        Route(AGENT_CARD_WELL_KNOWN_PATH, get_card, methods=["GET"]),
        Route("/", dispatcher.handle_requests, methods=["POST"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)
