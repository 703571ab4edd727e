"""The HTTP layer: a threaded stdlib server on 127.0.0.1 that writes :class:`Outcome` values.

The server knows nothing of the API. For each request it reads the body (one above the size
limit is drained and dropped, the handler gets None), asks the handler for an
:class:`Outcome` and writes it:

- a complete body with ``content-length`` (keep-alive);
- a stream with chunked transfer encoding, one chunk per SSE event, ended by the empty chunk;
- a cut: half of a complete body, or a stream without its final chunk, then the connection
  closes, so clients see an incomplete message.

Open connections are tracked so :meth:`SimHTTPServer.stop` can end idle keep-alive ones.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import cast

__all__ = ["Handler", "Outcome", "SimHTTPServer"]

_MAX_LINE = 65537
_DRAIN_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What to write for one request.

    Attributes:
        status: the HTTP status.
        headers: response headers (``content-length`` and ``transfer-encoding`` are added).
        body: the complete body (when ``events`` is None).
        events: encoded SSE events, each sent as one chunk.
        event_delay: seconds to wait before each event.
        cut: drop the connection (half of ``body``, or ``events`` without the final chunk).
    """

    status: int
    headers: Sequence[tuple[str, str]] = ()
    body: bytes = b""
    events: Sequence[bytes] | None = None
    event_delay: float = 0.0
    cut: bool = False


Handler = Callable[[str, str, Mapping[str, str], bytes | None], Outcome]
"""``(method, path, lower-cased headers, body or None when too large) -> Outcome``."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], handler: Handler, max_body_bytes: int) -> None:
        super().__init__(address, _RequestHandler)
        self.handler = handler
        self.max_body_bytes = max_body_bytes
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 120  # idle keep-alive connections end after this
    disable_nagle_algorithm = True  # headers and body go in separate writes

    @property
    def _server(self) -> _Server:
        return cast(_Server, self.server)

    def setup(self) -> None:
        super().setup()
        with self._server.connections_lock:
            self._server.connections.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            with self._server.connections_lock:
                self._server.connections.discard(self.connection)

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self._dispatch()

    def do_GET(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        headers: dict[str, str] = {}
        for name in self.headers.keys():  # noqa: SIM118 - Message.keys() keeps duplicates
            key = name.lower()
            if key not in headers:
                headers[key] = ", ".join(self.headers.get_all(name) or [])
        body = self._read_body(headers)
        outcome = self._server.handler(self.command, self.path, headers, body)
        try:
            self._write(outcome)
        except OSError:
            self.close_connection = True

    def _read_body(self, headers: Mapping[str, str]) -> bytes | None:
        """The request body, or None when it is above the limit (read and dropped)."""
        limit = self._server.max_body_bytes
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return self._read_chunked(limit)
        try:
            length = max(0, int(headers.get("content-length", "0") or "0"))
        except ValueError:
            length = 0
        if length <= limit:
            return self.rfile.read(length) if length else b""
        remaining = length
        while remaining > 0:
            dropped = self.rfile.read(min(remaining, _DRAIN_CHUNK))
            if not dropped:
                break
            remaining -= len(dropped)
        return None

    def _read_chunked(self, limit: int) -> bytes | None:
        parts: list[bytes] = []
        size = 0
        while True:
            line = self.rfile.readline(_MAX_LINE)
            try:
                length = int(line.split(b";", 1)[0].strip() or b"0", 16)
            except ValueError:
                length = 0
            if length == 0:
                while self.rfile.readline(_MAX_LINE) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                break
            data = self.rfile.read(length)
            self.rfile.readline(_MAX_LINE)
            size += length
            if size <= limit:
                parts.append(data)
        return b"".join(parts) if size <= limit else None

    def _write(self, outcome: Outcome) -> None:
        self.send_response(outcome.status)
        for name, value in outcome.headers:
            self.send_header(name, value)
        if outcome.events is None:
            self.send_header("content-length", str(len(outcome.body)))
            self.end_headers()
            if outcome.cut:
                self.wfile.write(outcome.body[: len(outcome.body) // 2])
                self.close_connection = True
                return
            self.wfile.write(outcome.body)
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in outcome.events:
            if outcome.event_delay:
                time.sleep(outcome.event_delay)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        if outcome.cut:
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")


class SimHTTPServer:
    """A :class:`ThreadingHTTPServer` on a background thread."""

    def __init__(
        self, handler: Handler, *, host: str = "127.0.0.1", port: int = 0, max_body_bytes: int
    ) -> None:
        self._handler = handler
        self._host = host
        self._port = port
        self._max_body_bytes = max_body_bytes
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        if self._server is None:
            raise RuntimeError("the server is not running")
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("the server is already running")
        server = _Server((self._host, self._port), self._handler, self._max_body_bytes)
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="AnthropicSimulator",
            daemon=True,
        )
        thread.start()
        self._server, self._thread = server, thread

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._server = self._thread = None
        server.shutdown()
        with server.connections_lock:
            connections = list(server.connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        server.server_close()
        thread.join(timeout=5)
