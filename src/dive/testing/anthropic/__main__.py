"""``python -m dive.testing.anthropic [--port N] [--demo]``: serve a simulator until interrupted.

The script starts empty and every request gets an echo of the last user text (with ``--demo``,
a :func:`~dive.testing.anthropic.demo_brain` reply), so any client pointed at the printed base
URL gets an answer.
"""

from __future__ import annotations

import argparse
import threading
from typing import Any

from dive.testing.anthropic._brain import demo_brain
from dive.testing.anthropic._cache import SimClock
from dive.testing.anthropic._request import as_dict, as_list
from dive.testing.anthropic._script import SimReply, text
from dive.testing.anthropic._simulator import AnthropicSimulator


def echo(body: dict[str, Any]) -> SimReply:
    """A text reply repeating the last user message's text."""
    said = ""
    for raw in reversed(as_list(body.get("messages")) or []):
        message = as_dict(raw)
        if message is None or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            said = content
        else:
            blocks = [as_dict(b) or {} for b in as_list(content) or []]
            said = " ".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        break
    return text(f"echo: {said}")


def main(argv: list[str] | None = None) -> None:
    """Start the simulator, print its base URL and serve until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m dive.testing.anthropic",
        description="A local Anthropic Messages API simulator (echo or demo replies).",
    )
    parser.add_argument("--port", type=int, default=0, help="port to bind (0 picks a free one)")
    parser.add_argument(
        "--demo", action="store_true", help="answer with the offline demo brain instead of echoes"
    )
    args = parser.parse_args(argv)
    fallback = demo_brain if args.demo else echo
    sim = AnthropicSimulator(port=args.port, clock=SimClock(realtime=True), fallback=fallback)
    with sim:
        print(sim.url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
