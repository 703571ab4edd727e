"""Parameter descriptions from Google, NumPy and Sphinx docstrings, parsed by griffe.

griffe (the parser the API reference uses too) detects the style; the summary is every line
before the first section, each description is joined onto one line, the way a tool's JSON
schema shows it, and ``x, y: ...`` describes both parameters. griffe is imported on the
first docstring that has sections (plain prose needs no parser), so ``import dive`` and
tools with one-line docstrings stay fast.
"""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from griffe import DocstringSection

__all__ = ["parse_docstring"]

# what may start a section in some style: ``Args:`` (Google), ``:param`` (Sphinx), a dashed
# underline (NumPy), a doctest; a docstring with none of these is only text
_SECTIONS = re.compile(r"(:\s*$)|(^\s*:)|(^\s*-{3,}\s*$)|(^\s*>>>)", re.MULTILINE)


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Return ``(summary, {param: description})``."""
    if not doc or not doc.strip():
        return "", {}
    text = inspect.cleandoc(doc)
    if _SECTIONS.search(text) is None:  # plain prose: griffe would return it as one text
        return text.strip(), {}
    sections = _sections(text)
    summary = ""
    if sections and sections[0].kind.value == "text":
        summary = str(sections[0].value).strip()
    params: dict[str, str] = {}
    for section in sections:
        if section.kind.value in ("parameters", "other parameters"):
            for param in section.value:
                description = " ".join(str(param.description).split())
                for name in str(param.name).split(","):  # "x, y: ..." documents both
                    params.setdefault(name.strip().lstrip("*"), description)
    return summary, params


def _sections(text: str) -> list[DocstringSection]:
    from griffe import Docstring, Parser, parse_auto

    return parse_auto(
        Docstring(text),
        default=Parser.google,
        style_order=[Parser.sphinx, Parser.google, Parser.numpy],
        # griffe's own warnings (missing types, unknown names) are for API docs, not schemas
        per_style_options={
            "google": {"warnings": False},
            "numpy": {"warnings": False},
            "sphinx": {"warnings": False},
        },
    )
