"""Markdown with YAML front matter: the format of skills and subagent definitions.

A file starts with ``---`` on its own line, YAML, and another ``---``; the rest is the body.
A file without front matter is all body. The YAML must be a mapping; anything else (or YAML
that does not parse) is a ``UserError`` naming the file.
"""

from __future__ import annotations

from typing import Any, cast

import yaml

from dive.errors import UserError

__all__ = ["list_field", "read_front_matter"]


def read_front_matter(text: str, *, source: str = "<text>") -> tuple[dict[str, Any], str]:
    """Split ``text`` into its front matter (a dict) and its body.

    Args:
        text: the Markdown text.
        source: the file name, for error messages.

    Raises:
        UserError: the front matter is not a YAML mapping.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            raw = "".join(lines[1:i])
            body = "".join(lines[i + 1 :])
            break
    else:
        raise UserError(f"{source}: the front matter opened with --- is never closed with ---")
    try:
        data: Any = yaml.safe_load(raw) if raw.strip() else {}
    except yaml.YAMLError as exc:
        raise UserError(f"{source}: the front matter is not valid YAML ({exc})") from exc
    if not isinstance(data, dict):
        raise UserError(f"{source}: the front matter must be a YAML mapping of fields")
    return {str(k): v for k, v in cast("dict[Any, Any]", data).items()}, body.lstrip("\n")


def list_field(value: Any, *, name: str, source: str) -> tuple[str, ...]:
    """A list of names given as a YAML list or a comma/space separated string.

    Args:
        value: the front-matter value (a list, a string, or None).
        name: the field's name, for the error message.
        source: the file it came from, for the error message.
    """
    if value is None:
        return ()
    if isinstance(value, str):
        return _split(value)
    if isinstance(value, list):
        return tuple(str(v).strip() for v in cast("list[Any]", value) if str(v).strip())
    raise UserError(f"{source}: {name} must be a list or a comma-separated string")


def _split(text: str) -> tuple[str, ...]:
    """Names split at commas or spaces, except inside parentheses (``Bash(git add:*)``)."""
    out: list[str] = []
    word: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        if depth == 0 and (ch == "," or ch.isspace()):
            if word:
                out.append("".join(word))
                word = []
            continue
        word.append(ch)
    if word:
        out.append("".join(word))
    return tuple(out)
