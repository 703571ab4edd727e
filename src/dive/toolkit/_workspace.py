"""``Workspace``: the one confinement check every file tool goes through.

A call's path is checked, then opened, in two steps that close the race between them:

1. **Check** (:meth:`Workspace.resolve`). The path is taken relative to the root (an absolute
   path must lie inside it), and :func:`os.path.realpath` resolves it, following every
   symbolic link the way the kernel would (``..`` included, dangling links resolved to their
   target). The real path must lie inside the real root. Anything else is refused, and so is
   any error while checking (a NUL byte, a link loop, a permission error): the check **fails
   closed**.
2. **Open** (:meth:`Workspace.open`). The checked path, which at check time contains no
   symbolic link, is opened *component by component* from a descriptor of the root:
   ``openat(dir_fd, name, O_NOFOLLOW)`` for each name, directories with ``O_DIRECTORY``. No
   step follows a symbolic link. If any component was swapped for a link after the check
   (a time-of-check/time-of-use race), its ``openat`` fails (``ELOOP``/``ENOTDIR``) and the
   call is refused, so the descriptor returned is always of a file that is inside the root
   at the moment it is opened. Missing parent directories of a write are created the same
   way (``mkdirat`` then ``openat`` without following), never outside the root.

Why this closes the race: the path string is never handed to the kernel as a whole after
the check. Each component is looked up in the directory the previous descriptor holds, and
a descriptor cannot change what it refers to; an attacker can only make a lookup fail.

Limits, stated plainly: the root itself (and its ancestors) is trusted; a hard link inside
the root to a file elsewhere is the same file and is not detected; the platform must
support ``dir_fd`` and ``O_NOFOLLOW`` (Linux, macOS, the BSDs) — elsewhere a ``Workspace``
refuses to be built rather than check less.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from dive.errors import ToolError, UserError

__all__ = ["PathOutsideWorkspaceError", "Workspace", "WorkspaceError"]

_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
_DIR_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
# what openat reports for a symbolic link under O_NOFOLLOW (EMLINK on FreeBSD)
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.ENOTDIR, errno.EMLINK})


class WorkspaceError(ToolError):
    """A workspace path that cannot be used: refused, missing, or failing to open."""


class PathOutsideWorkspaceError(WorkspaceError):
    """A path refused because it is, or could be, outside the workspace root."""


def _supported() -> bool:
    return bool(_NOFOLLOW and _DIRECTORY) and os.open in os.supports_dir_fd


class Workspace:
    """A directory the file tools are confined to.

    Args:
        root: the workspace directory (it must exist); it is resolved once, here, so a
            root given through a symbolic link is fixed to its real location.

    Raises:
        UserError: ``root`` is not an existing directory, or the platform cannot open files
            relative to a directory without following links.
    """

    __slots__ = ("_root", "_root_str")

    def __init__(self, root: str | os.PathLike[str]) -> None:
        if not _supported():
            raise UserError(
                "Workspace needs os.open with dir_fd and O_NOFOLLOW (Linux, macOS, BSD); this "
                "platform lacks them, so paths cannot be confined safely"
            )
        given: str = os.fspath(root)
        real: str = os.path.realpath(given)
        if not os.path.isdir(real):
            raise UserError(
                f"workspace root {given!r} is not an existing directory; "
                "create it first or pass another one"
            )
        self._root_str: str = real
        self._root = Path(real)

    @property
    def root(self) -> Path:
        """The real path of the root directory."""
        return self._root

    def __repr__(self) -> str:
        return f"Workspace({self._root_str!r})"

    # --- the check ----------------------------------------------------------------------------

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """The real path ``path`` names, checked to be inside the root.

        Args:
            path: relative to the root, or absolute (inside the root).

        Returns:
            The resolved absolute path (no symbolic links, no ``..``).

        Raises:
            PathOutsideWorkspaceError: it resolves outside the root (through ``..``, an
                absolute path or a symbolic link), or checking it failed.
        """
        shown = _shown(path)
        try:
            raw = os.fspath(path)
            if not isinstance(raw, str):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise TypeError("the path must be a string")
            if "\x00" in raw:
                raise ValueError("the path contains a NUL character")
            joined = os.path.join(self._root_str, raw or ".")
            real = os.path.realpath(joined)
            inside = self.contains(real)
        except Exception as exc:
            raise PathOutsideWorkspaceError(
                f"Refused {shown}: it could not be checked against the workspace root "
                f"{self._root_str} ({exc}). Use a plain path inside {self._root_str}."
            ) from None
        if not inside:
            lexical = os.path.normpath(joined)
            how = (
                "it goes through a symbolic link that points" if self.contains(lexical) else "it is"
            )
            raise PathOutsideWorkspaceError(
                f"Refused {shown}: {how} outside the workspace root {self._root_str} "
                f"(it resolves to {real}). Only paths inside {self._root_str} can be used."
            )
        return Path(real)

    def contains(self, real_path: str | os.PathLike[str]) -> bool:
        """Whether an absolute, already resolved path is the root or lies under it.

        Args:
            real_path: an absolute path without symbolic links (as :meth:`resolve` returns).
        """
        p = os.fspath(real_path)
        return os.path.isabs(p) and os.path.commonpath([self._root_str, p]) == self._root_str

    def relative(self, real_path: str | os.PathLike[str]) -> str:
        """``real_path`` relative to the root, as the tools show it (``"."`` for the root).

        Args:
            real_path: a path inside the root.
        """
        return os.path.relpath(os.fspath(real_path), self._root_str)

    # --- the open -----------------------------------------------------------------------------

    def open(
        self,
        path: str | os.PathLike[str],
        flags: int = os.O_RDONLY,
        mode: int = 0o666,
        *,
        parents: bool = False,
    ) -> int:
        """Check ``path`` and open it without following any symbolic link; returns a descriptor.

        The caller owns (and closes) the descriptor. ``O_NONBLOCK`` is added so a FIFO cannot
        hang the call (it has no effect on regular files); check the type with ``os.fstat``.

        Args:
            path: relative to the root, or absolute inside it.
            flags: ``os.open`` flags (``O_NOFOLLOW`` and ``O_CLOEXEC`` are always added;
                pass ``os.O_DIRECTORY`` to open a directory).
            mode: permission bits of a file ``O_CREAT`` creates.
            parents: create missing parent directories (inside the root only).

        Raises:
            PathOutsideWorkspaceError: the check refused it, or a component became a
                symbolic link between the check and the open.
            WorkspaceError: it does not exist, or the operating system refused the open.
        """
        return self._open(path, flags, mode, parents)[0]

    def open_relative(
        self, path: str | os.PathLike[str], flags: int = os.O_RDONLY
    ) -> tuple[int, str]:
        """Like :meth:`open` (without creating anything), also returning the path opened.

        Args:
            path: relative to the root, or absolute inside it.
            flags: ``os.open`` flags, as for :meth:`open`.

        Returns:
            ``(descriptor, path relative to the root)``, from one check.

        Raises:
            PathOutsideWorkspaceError: as for :meth:`open`.
            WorkspaceError: as for :meth:`open`.
        """
        fd, real = self._open(path, flags, 0o666, False)
        return fd, self.relative(real)

    def _open(
        self, path: str | os.PathLike[str], flags: int, mode: int, parents: bool
    ) -> tuple[int, Path]:
        real = self.resolve(path)
        parts = Path(self.relative(real)).parts
        if parts == (".",):
            parts = ()
        shown = _shown(path)
        flags |= _NONBLOCK | _NOFOLLOW | _CLOEXEC  # a FIFO must not hang the call
        try:
            return self._open_at(parts, flags, mode, parents, shown), real
        except WorkspaceError:
            raise
        except FileNotFoundError:
            raise WorkspaceError(
                f"{shown} does not exist in the workspace {self._root_str}. "
                "Check the name (Glob or ListDirectory show what is there)."
            ) from None
        except NotADirectoryError:
            raise WorkspaceError(
                f"{shown}: a component of the path is not a directory (workspace {self._root_str})."
            ) from None
        except IsADirectoryError:
            raise WorkspaceError(
                f"{shown} is a directory, not a file; use ListDirectory or Glob to see it."
            ) from None
        except OSError as exc:
            raise WorkspaceError(f"Could not open {shown}: {exc.strerror or exc}.") from None

    def _open_at(
        self, parts: tuple[str, ...], flags: int, mode: int, parents: bool, shown: str
    ) -> int:
        if not parts:  # the root itself: a directory, so only for reading
            if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                raise IsADirectoryError(errno.EISDIR, "is a directory")
            return os.open(self._root_str, _DIR_FLAGS)
        fd = os.open(self._root_str, _DIR_FLAGS)
        try:
            for name in parts[:-1]:
                nfd = self._step(fd, name, parents, shown)
                os.close(fd)
                fd = nfd
            try:
                return os.open(parts[-1], flags, mode, dir_fd=fd)
            except OSError as exc:
                self._raise_if_link(exc, fd, parts[-1], shown)
                raise
        finally:
            os.close(fd)

    def _step(self, fd: int, name: str, parents: bool, shown: str) -> int:
        """Open directory ``name`` under ``fd`` without following links (creating it if asked)."""
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not parents:
                raise
        except OSError as exc:
            self._raise_if_link(exc, fd, name, shown)
            raise
        try:
            os.mkdir(name, 0o777, dir_fd=fd)
        except FileExistsError:
            pass  # made meanwhile: opened (without following) just below
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            self._raise_if_link(exc, fd, name, shown)
            raise

    def _raise_if_link(self, exc: OSError, fd: int, name: str, shown: str) -> None:
        if exc.errno not in _LINK_ERRNOS:
            return
        try:
            is_link = stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
        except OSError:
            is_link = True  # cannot tell: fail closed
        if is_link:
            raise PathOutsideWorkspaceError(
                f"Refused {shown}: {name!r} became a symbolic link while it was being opened, "
                f"so it may point outside the workspace root {self._root_str}. Nothing was "
                "read or written."
            ) from None


def _shown(path: str | os.PathLike[str]) -> str:
    """A path for messages: quoted, and cut if absurdly long."""
    try:
        text = str(os.fspath(path))
    except TypeError:
        text = repr(path)
    if len(text) > 300:
        text = text[:300] + "…"
    return f'"{text}"'
