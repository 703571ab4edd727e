"""Helpers for the MCP tests: the fixture server over stdio, and as an HTTP process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from dive.mcp import MCPServerHTTP, MCPServerSSE, MCPServerStdio

FIXTURE = Path(__file__).with_name("mcp_fixture_server.py")
KEY = "k" * 32


def stdio_server(
    name: str = "fx",
    *,
    protocol: str = "auto",
    env: Mapping[str, str] | None = None,
) -> MCPServerStdio:
    """The fixture server as a child process."""
    return MCPServerStdio(
        name, sys.executable, [str(FIXTURE), "stdio"], env=dict(env or {}), protocol=protocol
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HTTPFixture:
    """The fixture server as its own process on 127.0.0.1 (streamable HTTP or SSE)."""

    def __init__(
        self, transport: Literal["streamable-http", "sse"] = "streamable-http", **env: str
    ) -> None:
        self.transport = transport
        self.port = free_port()
        self.env = {**os.environ, "MCP_FIXTURE_KEY": KEY, **env}
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        path = "sse" if self.transport == "sse" else "mcp"
        return f"http://127.0.0.1:{self.port}/{path}"

    def server(self, name: str = "fx", *, protocol: str = "auto") -> MCPServerHTTP | MCPServerSSE:
        if self.transport == "sse":
            return MCPServerSSE(name, self.url, protocol=protocol)
        return MCPServerHTTP(name, self.url, protocol=protocol)

    def start(self) -> HTTPFixture:
        self.proc = subprocess.Popen(
            [sys.executable, str(FIXTURE), self.transport, str(self.port)],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the fixture server exited with {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the fixture server did not start listening")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None
