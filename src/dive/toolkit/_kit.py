"""``file_tools``: the six workspace file tools bound to one :class:`Workspace`."""

from __future__ import annotations

import os

from dive.toolkit._files import Edit, Read, Write, as_workspace
from dive.toolkit._search import Glob, Grep, ListDirectory
from dive.toolkit._workspace import Workspace
from dive.tools import Tool

__all__ = ["file_tools"]


def file_tools(root: Workspace | str | os.PathLike[str]) -> list[Tool]:
    """``Read``, ``Write``, ``Edit``, ``Glob``, ``Grep`` and ``ListDirectory`` for one root.

    Args:
        root: the workspace, or its root directory (it must exist).

    Returns:
        The tools, sharing one :class:`Workspace`, in that order.

    Raises:
        UserError: ``root`` is not an existing directory.
    """
    ws = as_workspace(root)
    return [Read(ws), Write(ws), Edit(ws), Glob(ws), Grep(ws), ListDirectory(ws)]
