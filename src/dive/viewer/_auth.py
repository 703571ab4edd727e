"""Access: one token per viewer, carried by ``?token=``, a cookie or ``Authorization: Bearer``.

``TokenGate`` is ASGI middleware in front of every route but ``/static``. A request with no
token gets 401, a wrong token 403 (never a redirect). A valid ``?token=`` sets an
``HttpOnly``, ``SameSite=Strict`` cookie (named after the port, so two viewers on one host do
not overwrite each other's), and later pages are authorised by it.

Writes are POSTs checked twice: the token (as above) and, unless the token came in an
``Authorization`` header (which a browser never adds on its own), the form's CSRF field, an
HMAC of the token; a cross-origin ``Origin`` header is refused outright. So a form posted
without the token, or from another site, changes nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = ["TokenGate", "cookie_name", "csrf_token", "new_token", "same_origin"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_REFUSED = (
    "<!doctype html><html lang=en><meta charset=utf-8><title>{title}</title>"
    "<body style='font:16px system-ui;margin:3em;color:#111'><h1>{title}</h1><p>{text}</p>"
)


def new_token() -> str:
    """A random access token (URL-safe)."""
    return secrets.token_urlsafe(24)


def csrf_token(token: str) -> str:
    """The CSRF field every form carries: derived from the token, useless without it."""
    return hmac.new(token.encode(), b"dive-viewer-csrf", hashlib.sha256).hexdigest()[:40]


def cookie_name(scope: Scope) -> str:
    """``dive_viewer_<port>``: the cookie holding the token."""
    server = scope.get("server") or (None, None)
    return f"dive_viewer_{server[1] or 0}"


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


def same_origin(scope: Scope) -> bool:
    """False when an ``Origin`` header names another host than the request's."""
    headers = _headers(scope)
    origin = headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == headers.get("host", "")


def _presented(scope: Scope) -> tuple[str | None, str]:
    """The token the request carries and how: ``bearer``, ``query``, ``cookie`` or ``none``."""
    headers = _headers(scope)
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip(), "bearer"
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if query.get("token"):
        return query["token"][0], "query"
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # a malformed cookie header carries no token
        return None, "none"
    morsel = jar.get(cookie_name(scope))
    return (morsel.value, "cookie") if morsel is not None else (None, "none")


class TokenGate:
    """ASGI middleware: refuse requests without the token; remember a ``?token=`` in a cookie.

    Args:
        app: the application behind the gate.
        token: the access token.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or str(scope.get("path", "")).startswith("/static/"):
            await self.app(scope, receive, send)
            return
        presented, how = _presented(scope)
        if presented is None:
            await _refuse(send, 401, "Token required", "Open the URL dive serve printed.")
            return
        if not hmac.compare_digest(presented.encode(), self.token.encode()):
            await _refuse(send, 403, "Wrong token", "This token does not open this viewer.")
            return
        if scope.get("method") == "POST" and not same_origin(scope):
            await _refuse(send, 403, "Cross-origin request", "Posts must come from the viewer.")
            return
        scope.setdefault("state", {})["auth"] = how
        if how != "query":
            await self.app(scope, receive, send)
            return
        cookie = f"{cookie_name(scope)}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode()

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie)]
            await send(message)

        await self.app(scope, receive, send_with_cookie)


async def _refuse(send: Send, status: int, title: str, text: str) -> None:
    body = _REFUSED.format(title=title, text=text).encode()
    headers = [
        (b"content-type", b"text/html; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
    ]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="dive viewer"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
