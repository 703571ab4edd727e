"""The OS sandbox a ``Bash`` command runs in: bubblewrap (``bwrap``) on Linux.

Permission rules say what a person meant to allow; they read a command's text and cannot be
the guarantee (bash is too large a language to read completely). The sandbox is: whatever the
command text turns out to run, the processes it starts live in a fresh set of namespaces
(:meth:`Sandbox.command` builds the ``bwrap`` command line):

- **Files.** The root file system is mounted read-only. The workspace root is read-write,
  except ``.dive/`` (the permission settings, always) and the paths of
  :attr:`Sandbox.read_only` (by default ``.git/hooks`` and ``.git/config``, which git would run
  outside the sandbox), mounted read-only on top. ``/tmp``, ``/var/tmp`` and ``/dev/shm`` are
  private and empty, ``/run`` (where the sockets of docker, D-Bus and systemd live) is an empty
  directory, ``/dev`` holds only the basic devices, and :attr:`Sandbox.hidden` paths (by
  default the usual credential stores in the home directory) are replaced by empty ones.
- **Processes.** A new PID namespace with its own ``/proc``: the agent's process and its
  environment are invisible. When the command's shell exits, the namespace ends and every
  process left in it is killed (no background process survives the call), and
  ``--die-with-parent`` ends it if the agent's process dies. ``--new-session`` detaches it
  from any terminal; every capability is dropped.
- **Network.** A new network namespace with only a loopback interface, unless the call's
  ``Bash`` allows the network (``network=True`` shares the host's).
- **Environment.** Only what ``Bash`` lets through (its allow-list, never secrets), with
  ``TMPDIR=/tmp``.

:func:`sandbox_problem` checks once per process and executable that ``bwrap`` exists and can
create the namespaces (it cannot in some containers, or where unprivileged user namespaces
are disabled). Elsewhere (macOS, the BSDs) there is no sandbox: ``Bash`` refuses to run
commands unless it was built with ``sandbox="off"``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_HIDDEN",
    "DEFAULT_READ_ONLY",
    "PROTECTED",
    "Sandbox",
    "sandbox_problem",
]

_log = logging.getLogger("dive.toolkit")

PROTECTED: tuple[str, ...] = (".dive",)
"""Workspace paths always read-only inside the sandbox (the permission settings)."""
DEFAULT_READ_ONLY: tuple[str, ...] = (".git/hooks", ".git/config")
"""More workspace paths kept read-only by default: what git runs outside the sandbox."""
DEFAULT_HIDDEN: tuple[str, ...] = (
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.git-credentials",
    "~/.pypirc",
    "~/.npmrc",
    "~/.dive",
)
"""Paths replaced by empty ones inside the sandbox by default (credential stores)."""

_PROBE_TIMEOUT = 15.0
_problems: dict[str, str | None] = {}
_said: set[str] = set()


@dataclass(frozen=True, slots=True, kw_only=True)
class Sandbox:
    """How ``Bash`` confines its commands (bubblewrap on Linux).

    Attributes:
        writable: more directories commands may write, besides the workspace and the private
            ``/tmp`` (absolute, ``~/``, or relative to the workspace root; missing ones are
            skipped). A cache such as ``~/.cache/pip``, or the git directory of a worktree.
        read_only: workspace paths (relative to the root) kept read-only on top of the
            writable workspace; ``.dive`` is read-only whatever this says.
        hidden: paths (absolute or ``~/``) replaced by an empty directory or file.
        bwrap: the bubblewrap executable (a name looked up on ``PATH``, or a path).
    """

    writable: tuple[str, ...] = ()
    read_only: tuple[str, ...] = DEFAULT_READ_ONLY
    hidden: tuple[str, ...] = DEFAULT_HIDDEN
    bwrap: str = "bwrap"

    def executable(self) -> str | None:
        """The ``bwrap`` to run, or None when it is not installed."""
        return shutil.which(self.bwrap)

    def command(self, root: Path, argv: Sequence[str], *, network: bool) -> list[str]:
        """The ``bwrap`` command line that runs ``argv`` confined to the workspace ``root``.

        Protected paths that do not exist yet are created empty first (``.dive/``, and
        ``.git/hooks`` in a repository), so the command cannot create them either.

        Args:
            root: the workspace root (a real, absolute path).
            argv: the command to run inside (``/bin/bash -c ...``).
            network: share the host's network (True) or give it none but loopback.
        """
        args = _base(self.executable() or self.bwrap, network=network)
        args += _resolver_binds() if network else []
        args += ["--bind", str(root), str(root)]
        for hidden in _existing(self.hidden, root):
            if os.path.isdir(hidden):
                args += ["--tmpfs", hidden, "--remount-ro", hidden]
            else:
                args += ["--ro-bind", "/dev/null", hidden]
        for extra in _existing(self.writable, root):
            args += ["--bind", extra, extra]
        for protected in _protected(root, (*PROTECTED, *self.read_only)):
            args += ["--ro-bind", protected, protected]
        args += ["--chdir", str(root), "--", *argv]
        return args


def _base(bwrap: str, *, network: bool) -> list[str]:
    """The namespaces, the read-only root and the private directories."""
    args = [bwrap, "--die-with-parent", "--new-session", "--unshare-all"]
    args += ["--share-net"] if network else []
    args += ["--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for private in ("/tmp", "/var/tmp", "/dev/shm", "/run"):
        args += ["--tmpfs", private]
    return args


def _expand(path: str, root: Path) -> str:
    expanded = os.path.expanduser(path)
    return os.path.normpath(expanded if os.path.isabs(expanded) else os.path.join(root, expanded))


def _existing(paths: Sequence[str], root: Path) -> list[str]:
    """The paths that exist, expanded (``~``, relative to ``root``) and resolved."""
    out: list[str] = []
    for path in paths:
        full = _expand(path, root)
        if os.path.lexists(full):
            real = os.path.realpath(full)
            if real not in out:
                out.append(real)
    return out


def _protected(root: Path, paths: Sequence[str]) -> list[str]:
    """Workspace paths to mount read-only; ``.dive`` and a repository's hooks are created."""
    out: list[str] = []
    for rel in paths:
        full = os.path.normpath(os.path.join(root, rel))
        creatable = rel == ".dive" or (
            rel == ".git/hooks" and os.path.isdir(os.path.join(root, ".git"))
        )
        if creatable and not os.path.lexists(full):
            try:
                os.makedirs(full, exist_ok=True)
            except OSError:
                continue
        if not os.path.lexists(full):
            continue
        real = os.path.realpath(full)
        inside = real == str(root) or real.startswith(str(root).rstrip("/") + "/")
        if inside and real not in out:  # a link out of the workspace is read-only anyway
            out.append(real)
    return out


def _resolver_binds() -> list[str]:
    """``/etc/resolv.conf`` when it points into ``/run`` (systemd-resolved), bound back."""
    real = os.path.realpath("/etc/resolv.conf")
    if real.startswith("/run/") and os.path.exists(real):
        return ["--ro-bind", real, real]
    return []


async def sandbox_problem(sandbox: Sandbox) -> str | None:
    """Why commands cannot run in ``sandbox`` here (None: they can); checked once per process.

    The first problem found is also logged once, as a warning.

    Args:
        sandbox: the sandbox settings (its ``bwrap`` executable is what is checked).
    """
    key = sandbox.bwrap
    if key not in _problems:
        _problems[key] = await _probe(sandbox)
    problem = _problems[key]
    if problem is not None and key not in _said:
        _said.add(key)
        _log.warning("Bash commands will be refused: %s", problem)
    return problem


async def _probe(sandbox: Sandbox) -> str | None:
    if not sys.platform.startswith("linux"):
        return (
            f"there is no sandbox for Bash on {sys.platform} (dive confines commands with "
            "bubblewrap, which needs Linux; it does not drive macOS's sandbox-exec). Run the "
            'agent in a Linux container or VM, or build Bash(..., sandbox="off") to run '
            "commands unconfined (logged, and noted on each call's approval record)"
        )
    bwrap = sandbox.executable()
    if bwrap is None:
        return (
            f"bubblewrap ({sandbox.bwrap!r}) is not installed, and Bash runs every command in "
            "its sandbox. Install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf "
            'install bubblewrap), or build Bash(..., sandbox="off") to run commands '
            "unconfined (logged, and noted on each call's approval record)"
        )
    argv = [*_base(bwrap, network=False), "--", "/bin/true"]
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(_PROBE_TIMEOUT):
            _, err = await proc.communicate()
    except (OSError, TimeoutError) as exc:
        return f"bubblewrap ({bwrap}) could not be started: {exc}"
    if proc.returncode != 0:
        detail = err.decode("utf-8", "replace").strip() or f"exit code {proc.returncode}"
        return (
            f"bubblewrap ({bwrap}) cannot create a sandbox here ({detail}); in a container, "
            "allow user namespaces (or run bwrap setuid), or build "
            'Bash(..., sandbox="off") to run commands unconfined'
        )
    return None
