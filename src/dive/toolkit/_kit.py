"""``file_tools``: the six workspace file tools bound to one :class:`Workspace`."""

from __future__ import annotations

import os

from dive.toolkit._files import Edit, Read, Write, as_workspace
from dive.toolkit._search import Glob, Grep, ListDirectory
from dive.toolkit._workspace import Workspace
from dive.tools import Tool

__all__ = ["file_tools"]


def file_tools(
    root: Workspace | str | os.PathLike[str], *, ask_before_edits: bool = True
) -> list[Tool]:
    """``Read``, ``Write``, ``Edit``, ``Glob``, ``Grep`` and ``ListDirectory`` for one root.

    Args:
        root: the workspace, or its root directory (it must exist).
        ask_before_edits: ``Write`` and ``Edit`` ask before they run (``requires_approval``:
            the approval gate suspends, a permission policy's rules and mode decide);
            ``False`` lets them run unasked.

    Returns:
        The tools, sharing one :class:`Workspace`, in that order.

    Raises:
        UserError: ``root`` is not an existing directory.
    """
    ws = as_workspace(root)
    ask = ask_before_edits
    return [
        Read(ws),
        Write(ws, requires_approval=ask),
        Edit(ws, requires_approval=ask),
        Glob(ws),
        Grep(ws),
        ListDirectory(ws),
    ]
