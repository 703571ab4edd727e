"""Serving ASGI apps on 127.0.0.1 for tests: in-process (uvicorn) or in a child process."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def serve(app: Any) -> AsyncGenerator[str]:
    """Run ``app`` with uvicorn in this event loop; yield its base URL (with a slash)."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(500):
            if server.started or task.done():
                break
            await asyncio.sleep(0.01)
        if task.done():
            task.result()
        assert server.started, "the server did not start"
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 20)


@contextmanager
def child(module: str, *args: str) -> Generator[str]:
    """Run ``python -m tests.<module> <port> <args>`` (a server); yield its base URL."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", f"tests.{module}", str(port), *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"the child server exited: {proc.communicate()[1]}")
            try:
                httpx.get(url + ".well-known/agent-card.json", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
