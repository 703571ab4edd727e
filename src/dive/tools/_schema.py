"""A small JSON Schema validator for tool arguments (the subset tools use).

Supports ``type`` (including lists), ``properties``, ``required``, ``additionalProperties``
(boolean or schema), ``items``, ``enum``, ``const``, ``anyOf``/``oneOf``/``allOf``, ``$ref``
into ``$defs``/``definitions``, numeric and length bounds. Unknown keywords are ignored, so a
schema it does not understand never rejects valid input. Errors name the argument path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

__all__ = ["validate_against_schema"]

_TYPES: dict[str, Any] = {
    "object": Mapping,
    "array": (list, tuple),
    "string": str,
    "boolean": bool,
    "null": type(None),
}


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    tp = _TYPES.get(name)
    return True if tp is None else isinstance(value, tp)


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    seen = 0
    while "$ref" in schema and seen < 32:
        ref = str(schema["$ref"])
        if not ref.startswith("#/"):
            return {}
        node: Any = root
        for part in ref[2:].split("/"):
            node = (
                cast("Mapping[str, Any]", node).get(part, {}) if isinstance(node, Mapping) else {}
            )
        schema = cast("Mapping[str, Any]", node)
        seen += 1
    return schema


def _check(value: Any, schema: Any, root: Mapping[str, Any], path: str, out: list[str]) -> None:
    if schema is False:
        out.append(f"{path or 'input'}: not allowed")
        return
    if not isinstance(schema, Mapping):
        return
    s = _resolve(cast("Mapping[str, Any]", schema), root)
    where = path or "input"
    types = s.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(cast("Sequence[str]", types))
        if not any(_is_type(value, n) for n in names):
            out.append(f"{where}: expected {' or '.join(names)}, got {_json_type(value)}")
            return
    if "enum" in s and value not in s["enum"]:
        out.append(f"{where}: must be one of {list(s['enum'])!r}")
    if "const" in s and value != s["const"]:
        out.append(f"{where}: must equal {s['const']!r}")
    _check_combinators(value, s, root, path, out)
    if isinstance(value, Mapping):
        _check_object(cast("Mapping[str, Any]", value), s, root, path, out)
    elif isinstance(value, list | tuple):
        items = s.get("items")
        if items is not None:
            for i, v in enumerate(cast("Sequence[Any]", value)):
                _check(v, items, root, f"{path}[{i}]", out)
        _bounds(len(cast("Sequence[Any]", value)), s, "minItems", "maxItems", where, out, "items")
    elif isinstance(value, str):
        _bounds(len(value), s, "minLength", "maxLength", where, out, "characters")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _bounds(value, s, "minimum", "maximum", where, out, "")
        if "exclusiveMinimum" in s and not value > s["exclusiveMinimum"]:
            out.append(f"{where}: must be > {s['exclusiveMinimum']}")
        if "exclusiveMaximum" in s and not value < s["exclusiveMaximum"]:
            out.append(f"{where}: must be < {s['exclusiveMaximum']}")


def _check_combinators(
    value: Any, s: Mapping[str, Any], root: Mapping[str, Any], path: str, out: list[str]
) -> None:
    for key in ("anyOf", "oneOf"):
        options = s.get(key)
        if options and not any(_valid(value, o, root) for o in options):
            out.append(f"{path or 'input'}: does not match any allowed schema")
    for sub in s.get("allOf") or ():
        _check(value, sub, root, path, out)


def _check_object(
    value: Mapping[str, Any],
    s: Mapping[str, Any],
    root: Mapping[str, Any],
    path: str,
    out: list[str],
) -> None:
    props: Mapping[str, Any] = s.get("properties") or {}
    for name in s.get("required") or ():
        if name not in value:
            out.append(f"{path + '.' if path else ''}{name}: field required")
    extra = s.get("additionalProperties", True)
    for name, v in value.items():
        sub = props.get(name)
        where = f"{path}.{name}" if path else name
        if sub is not None:
            _check(v, sub, root, where, out)
        elif extra is False:
            out.append(f"{where}: unexpected argument")
        elif isinstance(extra, Mapping):
            _check(v, extra, root, where, out)


def _bounds(
    n: float, s: Mapping[str, Any], lo: str, hi: str, where: str, out: list[str], unit: str
) -> None:
    suffix = f" {unit}" if unit else ""
    if lo in s and n < s[lo]:
        out.append(f"{where}: must be at least {s[lo]}{suffix}")
    if hi in s and n > s[hi]:
        out.append(f"{where}: must be at most {s[hi]}{suffix}")


def _valid(value: Any, schema: Any, root: Mapping[str, Any]) -> bool:
    errs: list[str] = []
    _check(value, schema, root, "", errs)
    return not errs


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def validate_against_schema(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """Return a list of violations (empty when ``value`` is valid)."""
    out: list[str] = []
    _check(value, schema, schema, "", out)
    return out
