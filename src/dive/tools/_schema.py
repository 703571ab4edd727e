"""Tool arguments checked against a JSON Schema with ``jsonschema``.

The draft is the one the schema's ``$schema`` names (2020-12 when it names none). A compiled
validator is cached per schema object, so a tool's calls after the first pay only the check.
Arguments arrive as read-only mappings, so any ``Mapping`` counts as an object and a tuple as
an array. ``format`` is not asserted (as the specification's default says). Errors name the
argument path (``items[2].name: ...``), in the order the schema's keywords are checked.
A schema ``jsonschema`` cannot use (an unknown type, an unresolvable ``$ref``) is reported
as such, never raised: the call is answered with an error instead.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import jsonschema.exceptions

__all__ = ["validate_against_schema"]

_CACHE_SIZE = 512
_cache: OrderedDict[int, tuple[Mapping[str, Any], Any]] = OrderedDict()
_classes: dict[type, Any] = {}


def _thaw(value: Any) -> Any:
    """Plain dicts and lists (jsonschema walks schemas as JSON)."""
    if isinstance(value, Mapping):
        return {str(k): _thaw(v) for k, v in cast("Mapping[Any, Any]", value).items()}
    if isinstance(value, list | tuple):
        return [_thaw(v) for v in cast("Sequence[Any]", value)]
    return value


def _is_object(_: object, value: object) -> bool:
    return isinstance(value, Mapping)


def _is_array(_: object, value: object) -> bool:
    return isinstance(value, list | tuple)


def _validator_class(schema: Mapping[str, Any]) -> Any:
    import jsonschema  # imported on first use: most tools are validated by pydantic
    import jsonschema.validators

    base: Any = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls = _classes.get(base)
    if cls is None:
        checker = base.TYPE_CHECKER.redefine_many({"object": _is_object, "array": _is_array})
        validators: Any = jsonschema.validators
        cls = validators.extend(base, type_checker=checker)
        _classes[base] = cls
    return cls


def _compiled(schema: Mapping[str, Any]) -> Any:
    key = id(schema)
    hit = _cache.get(key)
    if hit is not None and hit[0] is schema:
        _cache.move_to_end(key)
        return hit[1]
    plain = _thaw(schema)
    validator = _validator_class(plain)(plain)
    _cache[key] = (schema, validator)  # the schema is kept, so its id is not reused
    if len(_cache) > _CACHE_SIZE:
        _cache.popitem(last=False)
    return validator


def _path(parts: Sequence[Any]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out or "input"


def _describe(error: jsonschema.exceptions.ValidationError) -> str:
    where = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, Mapping):
        names = cast("Sequence[Any]", error.validator_value)
        missing = next((n for n in names if repr(n) in error.message), None)
        if missing is not None:
            return f"{_path([*where, missing])}: field required"
    if error.validator == "additionalProperties" and error.validator_value is False:
        return f"{_path(where)}: {error.message}"
    if error.validator in ("anyOf", "oneOf") and error.context:
        import jsonschema.exceptions

        errors: Any = jsonschema.exceptions
        best: jsonschema.exceptions.ValidationError | None = errors.best_match(error.context)
        if best is not None:  # pyright: ignore[reportUnnecessaryComparison]
            return f"{_path(where)}: does not match any allowed schema ({_describe(best)})"
    return f"{_path(where)}: {error.message}"


def validate_against_schema(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """Return the violations of ``value`` against ``schema`` (empty when it is valid).

    Args:
        value: the arguments (or any JSON value).
        schema: a JSON Schema; its ``$schema`` picks the draft (2020-12 by default).

    Returns:
        One ``"path: message"`` string per violation, in the order they were found; a schema that
        cannot be used gives one message saying so.
    """
    try:
        validator = _compiled(schema)
        return [_describe(e) for e in validator.iter_errors(value)]
    except Exception as exc:  # an unknown type, an unresolvable $ref, a malformed keyword
        return [f"the tool's input schema is not usable ({_first_line(exc)}); fix the schema"]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
