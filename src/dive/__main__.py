"""``python -m dive``: the ``dive`` command line (needs the ``cli`` extra)."""

from __future__ import annotations

import sys


def main() -> None:
    """Run the command line, or say in one line which extra to install."""
    from dive.errors import MissingExtraError

    try:
        from dive.cli import main as cli_main
    except MissingExtraError as exc:  # says which extra to install
        sys.stderr.write(f"dive: {exc}\n")
        sys.exit(2)
    cli_main()


if __name__ == "__main__":
    main()
