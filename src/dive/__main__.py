"""``python -m dive``: the ``dive`` command line (needs the ``cli`` extra)."""

from __future__ import annotations

import sys


def main() -> None:
    """Run the command line, or say in one line which extra to install."""
    try:
        from dive.cli import main as cli_main
    except ImportError as exc:
        sys.stderr.write(
            f"dive: the command line needs the cli extra ({exc}): pip install 'dive-agents[cli]'\n"
        )
        sys.exit(2)
    cli_main()


if __name__ == "__main__":
    main()
