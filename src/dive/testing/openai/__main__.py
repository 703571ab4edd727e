"""``python -m dive.testing.openai [--port N]``: serve a simulator until interrupted.

The script starts empty and every request gets an echo of the last user text (Chat
Completions or Responses), so any client pointed at the printed base URL gets an answer.
"""

from __future__ import annotations

import argparse
import threading
from typing import Any, cast

from dive.testing.openai._cache import SimClock
from dive.testing.openai._script import SimReply, text
from dive.testing.openai._simulator import OpenAISimulator
from dive.testing.openai._tokens import input_items


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [cast(dict[str, Any], p) for p in cast(list[Any], content) if isinstance(p, dict)]
    return " ".join(
        str(p.get("text", "")) for p in parts if p.get("type") in ("text", "input_text")
    )


def echo(body: dict[str, Any]) -> SimReply:
    """A text reply repeating the last user message's text."""
    raw = body["messages"] if "messages" in body else input_items(body.get("input"))
    messages = [cast(dict[str, Any], m) for m in cast(list[Any], raw) if isinstance(m, dict)]
    said = next(
        (_text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), ""
    )
    return text(f"echo: {said}")


def main(argv: list[str] | None = None) -> None:
    """Start the simulator, print its base URL and serve until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m dive.testing.openai",
        description="A local OpenAI Chat Completions and Responses API simulator (echo replies).",
    )
    parser.add_argument("--port", type=int, default=0, help="port to bind (0 picks a free one)")
    args = parser.parse_args(argv)
    sim = OpenAISimulator(port=args.port, clock=SimClock(realtime=True), fallback=echo)
    with sim:
        print(sim.url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
