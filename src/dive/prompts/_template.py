"""Parsing a template into literal text and placeholder names, and measuring output.

A template is scanned once, left to right, at construction. ``{{`` opens a placeholder and the
next ``}}`` closes it; what lies between, trimmed, must be a name. Everything else, lone ``{``,
``}`` and ``}}`` included, is literal text. The result alternates literal text and names
(``parts[0]``, ``parts[2]``… are text; ``parts[1]``, ``parts[3]``… are names), which is all
``build()`` ever walks: bound values are never scanned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dive.errors import PromptError

__all__ = ["MAX_OUTPUT_BYTES", "Template", "parse", "utf8_size"]

MAX_OUTPUT_BYTES = 64 * 1024 * 1024
"""The most UTF-8 bytes one ``build()`` may produce (64 MiB)."""

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_SHOWN = 40  # characters of a bad placeholder quoted in an error

LITERAL_BRACES = (
    "to write '{{' as text, bind it as a value: Prompt('{{open}}x}}').bind_literal('open', '{{')"
)


@dataclass(frozen=True, slots=True)
class Template:
    """A parsed template: alternating literal text and names, and the text's size."""

    parts: tuple[str, ...]
    names: tuple[str, ...]  # distinct names, in order of first occurrence
    literal_size: int


def utf8_size(text: str) -> int:
    """The UTF-8 size of ``text`` in bytes (lone surrogates count as three)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def _quote(placeholder: str) -> str:
    if len(placeholder) <= _SHOWN:
        return repr(placeholder)
    return repr(placeholder[: _SHOWN - 3] + "...")


def parse(template: str) -> Template:
    """Split ``template`` into literal text and placeholder names, or raise ``PromptError``."""
    parts: list[str] = []
    text_start = 0
    while (start := template.find("{{", text_start)) >= 0:
        end = template.find("}}", start + 2)
        if end < 0:
            raise PromptError(
                f"unclosed placeholder at offset {start} of the template: '{{{{' has no "
                f"matching '}}}}'; close it, like {{{{name}}}}, or {LITERAL_BRACES}"
            )
        name = template[start + 2 : end].strip()
        if not _NAME.fullmatch(name):
            shown = _quote(template[start : end + 2])
            what = "empty placeholder" if not name else "invalid placeholder name"
            raise PromptError(
                f"{what} {shown} at offset {start} of the template: a name starts with an "
                "ASCII letter and has only letters, digits and '_' (like {{user_name}}); "
                f"rename it, or {LITERAL_BRACES}"
            )
        parts.append(template[text_start:start])
        parts.append(name)
        text_start = end + 2
    parts.append(template[text_start:])
    names = tuple(dict.fromkeys(parts[1::2]))
    literal_size = sum(utf8_size(text) for text in parts[::2])
    return Template(parts=tuple(parts), names=names, literal_size=literal_size)
