"""Text mode: the JSON object in an answer (fences, the whole text, or a brace scan)."""

from __future__ import annotations

import re

__all__ = ["candidates"]

_FENCE = re.compile(r"^```[ \t]*([A-Za-z0-9_-]*)[ \t]*\r?\n(.*?)^```[ \t]*\r?$", re.M | re.S)


def _balanced(text: str) -> str | None:
    """The first balanced ``{…}``, skipping braces inside JSON strings."""
    start = text.find("{")
    while start != -1:
        depth, in_string, escape = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_string:
                if escape:
                    escape = False
                elif ch == "\\":
                    escape = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
        start = text.find("{", start + 1)
    return None


def candidates(text: str) -> list[str]:
    """What to try to parse, in order: a ``json`` fence, a bare fence, the text, a brace scan."""
    fences = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(text)]
    out = [body for info, body in fences if info == "json"][:1]
    out += [body for info, body in fences if info == ""][:1]
    out.append(text.strip())
    found = _balanced(text)
    if found is not None:
        out.append(found)
    return out
