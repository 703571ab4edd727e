"""``python -m dive.testing.gemini [--port N]``: serve a simulator until interrupted.

The script starts empty and every request gets an echo of the last user text, so any client
pointed at the printed base URL gets an answer.
"""

from __future__ import annotations

import argparse
import threading
from typing import Any

from dive.testing.gemini._request import as_dict, as_list
from dive.testing.gemini._script import SimReply, text
from dive.testing.gemini._simulator import GeminiSimulator


def echo(body: dict[str, Any]) -> SimReply:
    """A text reply repeating the last user content's text parts."""
    said = ""
    for raw in reversed(as_list(body.get("contents")) or []):
        content = as_dict(raw)
        if content is None or content.get("role", "user") != "user":
            continue
        parts = [as_dict(p) or {} for p in as_list(content.get("parts")) or []]
        said = " ".join(str(p["text"]) for p in parts if isinstance(p.get("text"), str))
        break
    return text(f"echo: {said}")


def main(argv: list[str] | None = None) -> None:
    """Start the simulator, print its base URL and serve until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m dive.testing.gemini",
        description="A local Gemini generateContent API simulator (echo replies).",
    )
    parser.add_argument("--port", type=int, default=0, help="port to bind (0 picks a free one)")
    args = parser.parse_args(argv)
    with GeminiSimulator(port=args.port, fallback=echo) as sim:
        print(sim.url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
