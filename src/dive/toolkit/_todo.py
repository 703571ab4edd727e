"""``TodoWrite`` and ``TodoList``: the model's task list, kept where the application reads it.

Each call replaces the whole list (the model sends every item, with its current status).
The list lives in a :class:`TodoList` the application owns and reads; it keeps one list per
session (``ctx.session_id``), and runs without a session share one list (key ``None``).

Annotated read-only and idempotent: it touches nothing outside the ``TodoList``. It carries
no permission metadata, so only bare-name rules (``TodoWrite``) match it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from dive.tools import FunctionTool, ToolAnnotations, ToolContext, ToolReturn

__all__ = ["TodoItem", "TodoList", "TodoStatus", "TodoWrite", "render_todos"]

TodoStatus = Literal["pending", "in_progress", "completed"]
MAX_TODOS = 100

_MARKS: dict[str, str] = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


class TodoItem(BaseModel):
    """One task of the list.

    Attributes:
        content: what the task is, in a short imperative sentence.
        status: ``pending``, ``in_progress`` or ``completed``.
        id: an optional stable identifier (unique within the list).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: Annotated[str, Field(min_length=1, description="The task, in a short sentence.")]
    status: Annotated[TodoStatus, Field(description="pending, in_progress or completed.")]
    id: Annotated[str | None, Field(description="Optional stable id, unique in the list.")] = None


def render_todos(items: Sequence[TodoItem]) -> str:
    """The list as text: one ``[ ]``/``[~]``/``[x]`` line per item, with a summary first.

    Args:
        items: the items, in order.
    """
    if not items:
        return "The todo list is empty."
    done = sum(i.status == "completed" for i in items)
    active = sum(i.status == "in_progress" for i in items)
    head = (
        f"Todo list ({len(items)} items: {done} completed, {active} in progress, "
        f"{len(items) - done - active} pending):"
    )
    return "\n".join([head, *(f"{_MARKS[i.status]} {i.content}" for i in items)])


class TodoList:
    """The current todo lists, one per session; what ``TodoWrite`` writes and the app reads.

    Safe to read from any thread while a run writes it.
    """

    def __init__(self) -> None:
        self._lists: dict[str | None, tuple[TodoItem, ...]] = {}
        self._lock = threading.Lock()

    def get(self, session_id: str | None = None) -> tuple[TodoItem, ...]:
        """The list of a session (``None``: runs without a session); empty when never written.

        Args:
            session_id: the session whose list to read.
        """
        with self._lock:
            return self._lists.get(session_id, ())

    def set(self, items: Sequence[TodoItem], session_id: str | None = None) -> None:
        """Replace a session's list.

        Args:
            items: the new list, in order.
            session_id: the session (``None``: runs without a session).
        """
        with self._lock:
            self._lists[session_id] = tuple(items)

    def clear(self, session_id: str | None = None) -> None:
        """Forget a session's list.

        Args:
            session_id: the session (``None``: runs without a session).
        """
        with self._lock:
            self._lists.pop(session_id, None)

    def render(self, session_id: str | None = None) -> str:
        """The session's list as text (see :func:`render_todos`).

        Args:
            session_id: the session (``None``: runs without a session).
        """
        return render_todos(self.get(session_id))


_DESCRIPTION = """\
Create and update your task list for the current work. Use it for work with several steps:
write the plan as items, then keep it current as you go.

- Send the whole list every time (it replaces the previous one), each item with content
  (a short imperative sentence) and status: pending, in_progress or completed.
- Keep one item in_progress at a time: mark it in_progress before starting it and completed
  as soon as it is done (not before: if it is blocked or failed, keep it in_progress and add
  an item for what remains).
- At most {max} items; an optional id must be unique.
- The result shows the list as it now stands.
"""


class TodoWrite(FunctionTool):
    """``TodoWrite(todos)``: replace the task list kept in a :class:`TodoList`.

    Annotated read-only and idempotent; carries no permission metadata.

    Args:
        todos: where the lists are kept (a new :class:`TodoList` when omitted); read it
            back through ``tool.todos``.
    """

    def __init__(self, todos: TodoList | None = None) -> None:
        self.todos = todos if todos is not None else TodoList()
        super().__init__(
            self._write,
            name="TodoWrite",
            description=_DESCRIPTION.format(max=MAX_TODOS),
            annotations=ToolAnnotations(title="Update todo list", read_only=True, idempotent=True),
        )

    def _write(
        self,
        ctx: ToolContext,
        todos: Annotated[
            list[TodoItem],
            Field(max_length=MAX_TODOS, description="The complete, updated task list."),
        ],
    ) -> ToolReturn:
        ids = [t.id for t in todos if t.id is not None]
        duplicated = sorted({i for i in ids if ids.count(i) > 1})
        if duplicated:
            return ToolReturn(
                content=f"Duplicate todo ids: {', '.join(duplicated)}; give each item its own id.",
                is_error=True,
            )
        self.todos.set(todos, ctx.session_id)
        return ToolReturn(content=render_todos(todos))
