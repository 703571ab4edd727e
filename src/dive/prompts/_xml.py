"""The XML encoder of ``bind_xml``: a value as one element, indented by two spaces.

Scalars become character data (``&``, ``<``, ``>`` escaped), mappings child elements named
by their keys, sequences repeated ``<item>`` elements, ``None`` an empty element. Element
names are checked against XML's ``Name`` production (without ``:``), so no key can close an
element or open another; text can only ever be text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import cast

from pydantic import BaseModel

from dive.errors import PromptError
from dive.prompts._encode import model_data

__all__ = ["encode_xml"]

# XML 1.0 (fifth edition) NameStartChar and NameChar, less ':' (namespaces are not for data).
_START = (
    "A-Z_a-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d"
    "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff"
)
_NAME = re.compile(f"[{_START}][{_START}\\-.0-9\u00b7\u0300-\u036f\u203f-\u2040]*")
_SHOWN = 40
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_KEYS = "Rename the key, or bind a list of {'name': key, 'value': value} mappings instead."
_ACCEPTED = "a mapping, a list or tuple, a str, int, float, bool or None, or a pydantic model"


def _check_name(label: str, name: object, where: str, instead: str) -> str:
    if isinstance(name, str) and _NAME.fullmatch(name):
        return str.__str__(name)
    shown = repr(name) if len(repr(name)) <= _SHOWN else repr(name)[: _SHOWN - 3] + "..."
    raise PromptError(
        f"{label}: {shown} {where} is not a valid XML element name; an element name has "
        "letters, digits, '_', '-' and '.', starts with a letter or '_', and has no spaces or "
        f"':'. {instead}"
    )


def _text(value: str | int | float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return str.__str__(value).translate(_ESCAPES)
    if isinstance(value, int):
        return int.__repr__(value)
    return float.__repr__(value)


class _Writer:
    def __init__(self, label: str) -> None:
        self._label = label
        self._lines: list[str] = []
        self._open: set[int] = set()  # ids of the containers being written (cycle check)

    def text(self) -> str:
        return "\n".join(self._lines)

    def element(self, tag: str, value: object, depth: int, path: str) -> None:
        pad = "  " * depth
        if isinstance(value, BaseModel):
            value = model_data(value)
        if value is None:
            self._lines.append(f"{pad}<{tag}/>")
            return
        if isinstance(value, str | int | float):
            self._lines.append(f"{pad}<{tag}>{_text(value)}</{tag}>")
            return
        children = self._children(value, path)
        if not children:
            self._lines.append(f"{pad}<{tag}></{tag}>")
            return
        if id(value) in self._open:
            raise PromptError(
                f"{self._label}: the value at {path} contains itself; XML cannot show a cycle, "
                "so bind a copy without the back reference"
            )
        self._open.add(id(value))
        self._lines.append(f"{pad}<{tag}>")
        for child_tag, child, child_path in children:
            self.element(child_tag, child, depth + 1, child_path)
        self._lines.append(f"{pad}</{tag}>")
        self._open.discard(id(value))

    def _children(self, value: object, path: str) -> list[tuple[str, object, str]]:
        if isinstance(value, Mapping):
            items = cast("Mapping[object, object]", value)
            return [
                (_check_name(self._label, key, f"(a key at {path})", _KEYS), child, f"{path}.{key}")
                for key, child in items.items()
            ]
        if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
            entries = cast("Sequence[object]", value)
            return [("item", child, f"{path}[{i}]") for i, child in enumerate(entries)]
        raise PromptError(
            f"{self._label}: cannot encode the {type(value).__name__} at {path} as XML; pass "
            f"{_ACCEPTED}"
        )


def encode_xml(label: str, value: object, root: str) -> str:
    """``value`` as the element ``<root>…</root>``, children indented by two spaces."""
    tag = _check_name(label, root, "(root=)", "Pass a root name like root='document'.")
    writer = _Writer(label)
    try:
        writer.element(tag, value, 0, tag)
    except RecursionError as exc:
        raise PromptError(
            f"{label}: the value is nested too deeply to encode as XML; flatten it"
        ) from exc
    except PromptError:
        raise
    except ValueError as exc:  # a pydantic model that failed to dump
        raise PromptError(
            f"{label}: cannot encode the value as XML ({exc}); pass {_ACCEPTED} that dumps"
        ) from exc
    return writer.text()
