"""The built-in toolkit: workspace tools confined to a root, a shell, the web, the user.

Tool names follow Claude Code's. ``file_tools(root)`` gives ``Read``, ``Write``, ``Edit``,
``Glob``, ``Grep`` and ``ListDirectory`` sharing one :class:`Workspace`, which refuses any
path whose real location is outside the root (``..``, absolute paths, escaping symlinks,
and a component swapped for a link after the check). ``Bash`` runs a fresh shell per call in
the root, inside a bubblewrap :class:`Sandbox` (the workspace is all it can write, no network,
nothing outlives the call), with a timeout that kills the whole process tree; ``WebFetch``
fetches http(s) pages as Markdown, refusing private, loopback, link-local, CGNAT and metadata
addresses after resolving the name and connecting only to the checked address; ``WebSearch``
searches through a :class:`SearchBackend`; ``AskUser`` suspends the turn with a question;
``TodoWrite`` keeps a task list. Each tool carries annotations (read-only, destructive,
idempotent, open world) and the metadata the permission engine matches rules against.
``WebFetch`` and ``WebSearch`` need the ``toolkit`` extra. See ``docs/toolkit.md``.
"""

from dive.toolkit._ask import ASK_USER_TYPE, AskUser
from dive.toolkit._bash import DEFAULT_ENV_ALLOW, SECRET_ENV_PATTERNS, Bash
from dive.toolkit._files import Edit, Read, Write
from dive.toolkit._kit import file_tools
from dive.toolkit._sandbox import DEFAULT_HIDDEN, DEFAULT_READ_ONLY, Sandbox
from dive.toolkit._search import Glob, Grep, ListDirectory
from dive.toolkit._ssrf import AddressPolicy, AddressRefusedError, Resolver, SystemResolver
from dive.toolkit._todo import TodoItem, TodoList, TodoStatus, TodoWrite, render_todos
from dive.toolkit._webfetch import WebFetch
from dive.toolkit._websearch import (
    DuckDuckGoBackend,
    GoogleCSEBackend,
    SearchBackend,
    SearchError,
    SearchResult,
    SearxngBackend,
    WebSearch,
)
from dive.toolkit._workspace import PathOutsideWorkspaceError, Workspace, WorkspaceError

__all__ = [
    "ASK_USER_TYPE",
    "DEFAULT_ENV_ALLOW",
    "DEFAULT_HIDDEN",
    "DEFAULT_READ_ONLY",
    "SECRET_ENV_PATTERNS",
    "AddressPolicy",
    "AddressRefusedError",
    "AskUser",
    "Bash",
    "DuckDuckGoBackend",
    "Edit",
    "Glob",
    "GoogleCSEBackend",
    "Grep",
    "ListDirectory",
    "PathOutsideWorkspaceError",
    "Read",
    "Sandbox",
    "Resolver",
    "SearchBackend",
    "SearchError",
    "SearchResult",
    "SearxngBackend",
    "SystemResolver",
    "TodoItem",
    "TodoList",
    "TodoStatus",
    "TodoWrite",
    "WebFetch",
    "WebSearch",
    "Workspace",
    "WorkspaceError",
    "Write",
    "file_tools",
    "render_todos",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
