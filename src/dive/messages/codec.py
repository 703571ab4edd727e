"""JSON encoding and validated decoding for dive's frozen dataclasses.

Encoding is hand-written and fast (it runs on every save): dataclass fields at their default
are omitted except the ``type`` discriminator, tuples become lists, frozensets sorted
lists, datetimes RFC 3339 UTC with a ``Z``. Decoding goes through a cached pydantic
``TypeAdapter`` so every violation is reported with its field path, as a
:class:`~dive.errors.MessageValidationError`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from types import MappingProxyType
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic import JsonValue as JSONValue

from dive.errors import MessageValidationError

__all__ = [
    "EMPTY",
    "FORBID_EXTRA",
    "JSONValue",
    "decode",
    "dumps",
    "empty",
    "freeze_mapping",
    "to_jsonable",
]

T = TypeVar("T")

EMPTY: Mapping[str, Any] = MappingProxyType({})
"""The shared empty read-only mapping used as a default."""


def empty() -> Mapping[str, Any]:
    """Default factory for read-only mapping fields."""
    return EMPTY


FORBID_EXTRA = ConfigDict(extra="forbid")
"""Pydantic config set on every codec dataclass: unknown fields are errors, never dropped."""

_KEEP = frozenset({"type"})
_MISSING: Any = object()
MISSING: Any = _MISSING
"""Marks a field without a default in :func:`field_defaults`."""

# Discriminator tags pydantic inserts into error locations; they are not field names.
_UNION_FIELDS = frozenset({"source"})


def freeze_mapping(value: Mapping[str, T]) -> Mapping[str, T]:
    """Return a read-only view of ``value`` (``EMPTY`` when empty).

    Args:
        value: the mapping to freeze.
    """
    if isinstance(value, MappingProxyType):
        return value
    if not value:
        return EMPTY
    return MappingProxyType(dict(value))


@cache
def _defaults(cls: type) -> tuple[tuple[str, Any], ...]:
    out: list[tuple[str, Any]] = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = _MISSING
        out.append((f.name, _MISSING if f.name in _KEEP else default))
    return tuple(out)


def field_defaults(cls: type) -> tuple[tuple[str, Any], ...]:
    """``(name, default)`` per dataclass field; ``MISSING`` when the field is always written."""
    return _defaults(cls)


_ATOMIC: frozenset[type] = frozenset({str, int, float, bool, type(None)})
_PLANS: dict[type, tuple[tuple[str, Any], ...]] = {}  # a record type's fields and defaults


def to_jsonable(value: Any) -> Any:
    """Convert a dive value (dataclass, tuple, mapping, datetime…) to plain JSON data.

    Args:
        value: the value to convert.
    """
    kind: type = type(value)  # pyright: ignore[reportUnknownVariableType]
    if kind in _ATOMIC:
        return value
    plan = _PLANS.get(kind)
    if plan is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        plan = _PLANS[kind] = _defaults(kind)
    if plan is not None:  # a record: its fields that differ from their defaults
        out: dict[str, Any] = {}
        for name, default in plan:
            v = getattr(value, name)
            if default is not _MISSING and (v is default or v == default):
                continue
            out[name] = v if type(v) in _ATOMIC else to_jsonable(v)
        return out
    if isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, tuple | list):
        return [to_jsonable(v) for v in cast("tuple[Any, ...]", value)]
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in cast("Mapping[Any, Any]", value).items()}
    if isinstance(value, frozenset | set):
        return sorted(to_jsonable(v) for v in cast("frozenset[Any]", value))
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_defaults=True)
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def dumps(value: Any) -> str:
    """Encode a dive value as compact JSON text.

    Args:
        value: the value to encode.
    """
    return _ENCODER.encode(to_jsonable(value))


def format_time(value: datetime) -> str:
    """RFC 3339 UTC with a ``Z`` suffix."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


@cache
def _adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def _format_loc(root: str, loc: tuple[int | str, ...], tags: frozenset[str]) -> str:
    path = root
    prev: int | str | None = None
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in tags and (isinstance(prev, int) or prev in _UNION_FIELDS):
            pass  # a union tag pydantic added, not a field
        elif part.startswith("function-"):
            pass
        else:
            path += f".{part}" if path else part
        prev = part
    return path


def decode(tp: Any, data: Any, *, root: str = "") -> Any:
    """Validate plain data (or JSON text) into ``tp``; raise ``MessageValidationError``.

    Args:
        tp: the type to validate into (a record class, a union, ``tuple[Message, ...]``, ...).
        data: plain data, or JSON text.
        root: a path prefix for error messages (``messages``, say).
    """
    from dive.messages._blocks import BLOCK_TAGS

    adapter = _adapter(tp)
    try:
        if isinstance(data, str | bytes):
            return adapter.validate_json(data)
        return adapter.validate_python(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        path = _format_loc(root, tuple(err["loc"]), BLOCK_TAGS)
        msg = str(err["msg"])
        ctx = err.get("ctx") or {}
        cause = ctx.get("error")
        if isinstance(cause, MessageValidationError):
            msg = str(cause.args[0]) if cause.args else str(cause)
            if cause.path:
                path = f"{path}.{cause.path}" if path else cause.path
                msg = msg.removeprefix(f"{cause.path}: ")
        elif msg.startswith("Value error, "):
            msg = msg.removeprefix("Value error, ")
        if err["type"] == "missing":
            msg = "field required"
        elif err["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
            msg = "unknown field"
        more = len(exc.errors()) - 1
        suffix = f" (and {more} more error{'s' if more > 1 else ''})" if more else ""
        raise MessageValidationError(msg + suffix, path=path) from None
