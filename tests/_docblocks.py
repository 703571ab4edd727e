"""The fenced code blocks of README.md and the documentation site, read as the site reads them.

A fence is three backticks, at any indentation (content tabs indent theirs), followed by an
info string: a language (```` ```python ````) or an attribute list
(```` ``` {.python .no-run title="pydantic-ai"} ````). Python blocks run unless they carry the
``no-run`` class; every other language is there to be read (console sessions, shell lines,
JSON, text), and ``dive`` console sessions run in their own tests.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
OPEN = re.compile(r"^(?P<indent> *)```(?P<info>[^`]*)$")
ATTRS = re.compile(r"^\{(?P<body>.*)\}$")
TITLE = re.compile(r'title="(?P<title>[^"]*)"')

# Languages that are shown, never run. A python block that must not run says so itself.
SHOWN = frozenset({"console", "sh", "bash", "json", "text", "toml", "yaml", "markdown", "ini"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """One fenced block: where it is, its language, classes, title and code."""

    page: str
    line: int
    language: str
    classes: frozenset[str]
    title: str
    code: str

    @property
    def runs(self) -> bool:
        return self.language == "python" and "no-run" not in self.classes

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """README.md and every Markdown page of the site (the API reference pages hold no code)."""
    found = [ROOT / "README.md"]
    found += sorted(p for p in DOCS.rglob("*.md") if "reference" not in p.relative_to(DOCS).parts)
    return found


def _info(info: str) -> tuple[str, frozenset[str], str]:
    info = info.strip()
    title_match = TITLE.search(info)
    title = title_match.group("title") if title_match else ""
    attrs = ATTRS.match(info)
    if attrs:
        classes = [w[1:] for w in attrs.group("body").split() if w.startswith(".")]
        language = classes[0] if classes else ""
        return language, frozenset(classes[1:]), title
    language = info.split()[0] if info else ""
    return language, frozenset(), title


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of one page, in order."""
    lines = path.read_text().splitlines()
    page = str(path.relative_to(ROOT))
    out: list[Block] = []
    i = 0
    while i < len(lines):
        opened = OPEN.match(lines[i])
        if not opened:
            i += 1
            continue
        indent = opened.group("indent")
        language, classes, title = _info(opened.group("info"))
        start = i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i] != f"{indent}```":
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise AssertionError(f"{page}:{start + 1}: the fence is never closed")
        i += 1
        code = textwrap.dedent("\n".join(body)) + "\n"
        out.append(
            Block(
                page=page,
                line=start + 1,
                language=language,
                classes=classes,
                title=title,
                code=code,
            )
        )
    return out


def all_blocks() -> list[Block]:
    return [b for p in pages() for b in blocks(p)]


def shown_output(code: str) -> list[str]:
    """What a block says it prints: the text after ``# →`` (up to an ellipsis)."""
    return [m.split("…")[0].strip() for m in re.findall(r"# → (.+)$", code, re.MULTILINE)]
