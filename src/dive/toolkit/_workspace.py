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
3. **Replace** (:meth:`Workspace.open_parent` and :func:`replace_at`). A file is rewritten by
   opening its directory that way, writing a temporary file in it (``O_CREAT | O_EXCL``,
   relative to the directory's descriptor), syncing it and renaming it over the name
   (``renameat``, which replaces a link rather than following it): all or nothing.

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
import secrets
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
            raise PathOutsideWorkspaceError(  # where it leads stays unsaid, as ListDirectory
                f"Refused {shown}: {how} outside the workspace root {self._root_str}. Only "
                f"paths inside {self._root_str} can be used."
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

    def open_parent(
        self, path: str | os.PathLike[str], *, parents: bool = False
    ) -> tuple[int, str]:
        """Check ``path`` and open the directory that holds it, without following links.

        For replacing a file whole: create a temporary file in the directory and
        ``os.replace`` it over the name, both relative to the descriptor (``dir_fd``), and
        open the current file with :meth:`open_entry`. The caller owns (and closes) the
        descriptor.

        Args:
            path: relative to the root, or absolute inside it (not the root itself).
            parents: create missing parent directories (inside the root only).

        Returns:
            ``(directory descriptor, the file's name in that directory)``.

        Raises:
            PathOutsideWorkspaceError: as for :meth:`open`.
            WorkspaceError: a parent is missing or not a directory, or ``path`` is the root.
        """
        real = self.resolve(path)
        parts = self._parts(real)
        shown = _shown(path)
        try:
            if not parts:
                raise IsADirectoryError(errno.EISDIR, "is a directory")
            return self._parent_fd(parts, parents, shown), parts[-1]
        except OSError as exc:
            raise self._error(exc, shown) from None

    def open_entry(
        self,
        dir_fd: int,
        name: str,
        flags: int = os.O_RDONLY,
        mode: int = 0o666,
        *,
        shown: str | None = None,
    ) -> int:
        """Open ``name`` in a directory :meth:`open_parent` opened, without following a link.

        Args:
            dir_fd: the directory descriptor.
            name: one name in it (no ``/``).
            flags: ``os.open`` flags (``O_NOFOLLOW``, ``O_CLOEXEC`` and ``O_NONBLOCK`` added).
            mode: permission bits of a file ``O_CREAT`` creates.
            shown: the path as the caller gave it, for messages (default: ``name``).

        Raises:
            PathOutsideWorkspaceError: ``name`` is (or became) a symbolic link.
            WorkspaceError: it does not exist, or the operating system refused the open.
        """
        label = _shown(shown if shown is not None else name)
        try:
            try:
                return os.open(name, flags | _NONBLOCK | _NOFOLLOW | _CLOEXEC, mode, dir_fd=dir_fd)
            except OSError as exc:
                self._raise_if_link(exc, dir_fd, name, label)
                raise
        except WorkspaceError:
            raise
        except OSError as exc:
            raise self._error(exc, label) from None

    def _parts(self, real: Path) -> tuple[str, ...]:
        parts = Path(self.relative(real)).parts
        return () if parts == (".",) else parts

    def _error(self, exc: OSError, shown: str) -> WorkspaceError:
        """The message for an ``OSError`` while opening ``shown``."""
        if isinstance(exc, FileNotFoundError):
            return WorkspaceError(
                f"{shown} does not exist in the workspace {self._root_str}. "
                "Check the name (Glob or ListDirectory show what is there)."
            )
        if isinstance(exc, NotADirectoryError):
            return WorkspaceError(
                f"{shown}: a component of the path is not a directory (workspace {self._root_str})."
            )
        if isinstance(exc, IsADirectoryError):
            return WorkspaceError(
                f"{shown} is a directory, not a file; use ListDirectory or Glob to see it."
            )
        return WorkspaceError(f"Could not open {shown}: {exc.strerror or exc}.")

    def _open(
        self, path: str | os.PathLike[str], flags: int, mode: int, parents: bool
    ) -> tuple[int, Path]:
        real = self.resolve(path)
        parts = self._parts(real)
        shown = _shown(path)
        flags |= _NONBLOCK | _NOFOLLOW | _CLOEXEC  # a FIFO must not hang the call
        try:
            return self._open_at(parts, flags, mode, parents, shown), real
        except WorkspaceError:
            raise
        except OSError as exc:
            raise self._error(exc, shown) from None

    def _open_at(
        self, parts: tuple[str, ...], flags: int, mode: int, parents: bool, shown: str
    ) -> int:
        if not parts:  # the root itself: a directory, so only for reading
            if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
                raise IsADirectoryError(errno.EISDIR, "is a directory")
            return os.open(self._root_str, _DIR_FLAGS)
        fd = self._parent_fd(parts, parents, shown)
        try:
            try:
                return os.open(parts[-1], flags, mode, dir_fd=fd)
            except OSError as exc:
                self._raise_if_link(exc, fd, parts[-1], shown)
                raise
        finally:
            os.close(fd)

    def _parent_fd(self, parts: tuple[str, ...], parents: bool, shown: str) -> int:
        """A descriptor of the directory holding ``parts[-1]``, opened step by step."""
        fd = os.open(self._root_str, _DIR_FLAGS)
        try:
            for name in parts[:-1]:
                nfd = self._step(fd, name, parents, shown)
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd

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


def replace_at(dir_fd: int, name: str, data: bytes, old: os.stat_result | None) -> None:
    """Replace file ``name`` in the directory ``dir_fd`` with ``data``, all at once.

    The bytes go to a new file in the same directory (``O_CREAT | O_EXCL``, never following
    a link; the mode and, where permitted, the owner copied from ``old``, the current file's
    status, or ``0o666`` less the umask for a new file). It is synced, then renamed over
    ``name`` relative to ``dir_fd`` (a rename replaces a link, never follows it). A failure
    on the way (a full disk, an I/O error) removes the new file and raises, leaving the old
    file as it was. Other hard links to the old file keep the old content.

    Args:
        dir_fd: the directory, from :meth:`Workspace.open_parent`.
        name: the file's name in it.
        data: the complete new content.
        old: the status of the file replaced, or None for a new file.

    Raises:
        OSError: the new content could not be written or renamed into place.
    """
    mode = stat.S_IMODE(old.st_mode) if old is not None else 0o666
    tmp, fd = _temp_file(dir_fd, name, mode)
    try:
        try:
            if old is not None:
                os.fchmod(fd, mode)  # exactly the old mode, whatever the umask
                _keep_owner(fd, old)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    try:
        os.fsync(dir_fd)  # the rename itself survives a crash
    except OSError:
        pass


def _temp_file(dir_fd: int, name: str, mode: int) -> tuple[str, int]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    for _ in range(100):
        tmp = f".{name[:100]}.{secrets.token_hex(6)}.tmp"
        try:
            return tmp, os.open(tmp, flags, mode, dir_fd=dir_fd)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free name for a temporary file")


def _keep_owner(fd: int, old: os.stat_result) -> None:
    if (old.st_uid, old.st_gid) == (os.geteuid(), os.getegid()):
        return
    try:
        os.fchown(fd, old.st_uid, old.st_gid)
    except OSError:
        pass  # not permitted: the file now belongs to this user, as a new file would


def _shown(path: str | os.PathLike[str]) -> str:
    """A path for messages: quoted, and cut if absurdly long."""
    try:
        text = str(os.fspath(path))
    except TypeError:
        text = repr(path)
    if len(text) > 300:
        text = text[:300] + "…"
    return f'"{text}"'
