"""Who holds a claim: the host and process recorded with it, and whether that process is gone.

Every claim row records the claiming process's host and pid (``current``). A claim that has
not expired is normally respected until its TTL, but a claimant on the same host can tell
that the owner was killed (``kill -9``, an OOM kill, a crash) and take over at once:
``gone`` is true only when the row's host is this host and no live process has its pid.

"This host" is the host name and, on Linux, the PID namespace (``/proc/self/ns/pid``):
containers that share a host name but not a process table do not judge each other's pids.
A zombie (killed, not yet reaped) counts as dead. A pid reused by a new process counts as
alive, so the claim then keeps its TTL: an error here only ever makes dive wait longer. On
Windows, where probing a pid is not harmless, claims always keep their TTL.
"""

from __future__ import annotations

import functools
import os
import socket
from pathlib import Path

__all__ = ["current", "gone", "this_host"]


@functools.cache
def this_host() -> str:
    """The host name, with the PID namespace where the system has one (``name/pid:[…]``)."""
    name = socket.gethostname()
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except (OSError, AttributeError):
        return name
    return f"{name}/{namespace}"


def current() -> tuple[str, int]:
    """``(host, pid)`` of the calling process, as recorded with a claim it takes."""
    return this_host(), os.getpid()


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rsplit(")", 1)[-1].split()
    return bool(fields) and fields[0] in ("Z", "X")


def gone(host: str, pid: int) -> bool:
    """True when a claim recorded by ``host``/``pid`` was taken here by a process now dead."""
    if os.name == "nt" or pid <= 0 or host != this_host() or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # EPERM: alive, owned by another user
        return False
    return _zombie(pid)
