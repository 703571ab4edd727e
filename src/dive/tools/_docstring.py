"""Parameter descriptions from Google, NumPy and Sphinx docstrings."""

from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring"]

_GOOGLE_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_GOOGLE_ARG = re.compile(r"^(\s*)(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_SECTION = re.compile(r"^\s*(Parameters|Other Parameters)\s*$")
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:[\w\[\], |.]+\s+)?(\w+)\s*:\s*(.*)$")
_ANY_SECTION = re.compile(
    r"^\s*(Returns?|Yields?|Raises|Examples?|Notes?|Attributes|See Also|Warnings?|References)"
    r"\s*:?\s*$"
)


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Return ``(summary, {param: description})``."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary_lines: list[str] = []
    for line in lines:
        if (
            _GOOGLE_SECTION.match(line)
            or _NUMPY_SECTION.match(line)
            or _SPHINX_PARAM.match(line)
            or _ANY_SECTION.match(line)
            or line.strip().startswith(":")
        ):
            break
        summary_lines.append(line)
    summary = "\n".join(summary_lines).strip()
    params = _sphinx(lines) or _google(lines) or _numpy(lines)
    return summary, params


def _sphinx(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    current: str | None = None
    for line in lines:
        m = _SPHINX_PARAM.match(line)
        if m:
            current = str(m.group(1))
            out[current] = m.group(2).strip()
        elif current and line.startswith((" ", "\t")) and line.strip():
            out[current] += " " + line.strip()
        else:
            current = None
    return out


def _google(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    inside = False
    indent: int | None = None
    current: str | None = None
    for line in lines:
        if _GOOGLE_SECTION.match(line):
            inside, indent, current = True, None, None
            continue
        if not inside:
            continue
        if line.strip() and not line.startswith((" ", "\t")):
            break
        m = _GOOGLE_ARG.match(line)
        width = len(line) - len(line.lstrip())
        if m and (indent is None or width == indent):
            indent = width
            current = str(m.group(2)).lstrip("*")
            out[current] = m.group(3).strip()
        elif current and line.strip():
            out[current] = (out[current] + " " + line.strip()).strip()
    return out


def _numpy(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    i = 0
    while i < len(lines):
        if (
            _NUMPY_SECTION.match(lines[i])
            and i + 1 < len(lines)
            and set(lines[i + 1].strip()) == {"-"}
        ):
            i += 2
            current: str | None = None
            while i < len(lines):
                line = lines[i]
                if i + 1 < len(lines) and set(lines[i + 1].strip() or "x") == {"-"}:
                    break
                if line.strip() and not line.startswith((" ", "\t")):
                    current = line.split(":")[0].strip()
                    out[current] = ""
                elif current and line.strip():
                    out[current] = (out[current] + " " + line.strip()).strip()
                i += 1
            return out
        i += 1
    return out
