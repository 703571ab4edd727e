"""How the command line fails: one line on stderr and an exit code, never a traceback.

Exit codes: ``0`` the turn completed (or the command succeeded), ``1`` the turn ended
incomplete or something failed at run time (a store, a provider), ``2`` a usage error (a bad
flag, setting, model name or session id), ``3`` the turn is suspended waiting for an answer.
``DIVE_DEBUG=1`` adds the traceback of an unexpected error.
"""

from __future__ import annotations

import os
import sys
import traceback

from dive.errors import DiveError, InputOnSuspendedSessionError, UserError

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_SUSPENDED",
    "EXIT_USAGE",
    "CliError",
    "exit_code_of",
    "say",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SUSPENDED = 3


class CliError(Exception):
    """A failure reported as one line on stderr with an exit code.

    Args:
        message: what happened and what to do, on one line.
        code: the exit code (``EXIT_USAGE`` for a usage error).
    """

    def __init__(self, message: str, code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.code = code


def say(line: str) -> None:
    """Write one line to stderr, prefixed ``dive:``."""
    sys.stderr.write(f"dive: {' '.join(line.split())}\n")
    sys.stderr.flush()


def exit_code_of(exc: BaseException) -> int:
    """Report ``exc`` on stderr (one line) and return the exit code it means."""
    if isinstance(exc, CliError):
        say(str(exc))
        return exc.code
    if isinstance(exc, InputOnSuspendedSessionError):
        say(f"{exc} (answer the pending call with `dive chat --resume ID`)")
        return EXIT_SUSPENDED
    if isinstance(exc, UserError):
        say(str(exc))
        return EXIT_USAGE
    if isinstance(exc, DiveError):
        say(f"{type(exc).__name__}: {exc}")
        return EXIT_FAILED
    if isinstance(exc, KeyboardInterrupt):
        say("interrupted")
        return 130
    if isinstance(exc, OSError):
        say(f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}")
        return EXIT_FAILED
    say(f"unexpected error {type(exc).__name__}: {exc} (DIVE_DEBUG=1 shows the traceback)")
    if os.environ.get("DIVE_DEBUG"):
        traceback.print_exception(exc, file=sys.stderr)
    return EXIT_FAILED
