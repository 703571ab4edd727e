"""Construction errors that name the field, as decoding does.

A dataclass's generated ``__init__`` raises a bare ``TypeError`` for a missing or unknown
keyword. :func:`named_fields` wraps it: such a call raises :class:`MessageFieldError` (a
``MessageValidationError`` and still a ``TypeError``) whose ``path`` is the field, with the
decoder's wording (``field required``, ``unknown field``). Well-formed calls pay one extra
call frame; any other ``TypeError`` passes through unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from dataclasses import MISSING, fields
from typing import Any, TypeVar

from dive.errors import MessageFieldError

__all__ = ["named_fields"]

T = TypeVar("T")


def field_error(
    record: str, given: Mapping[str, Any], known: Collection[str], required: Collection[str]
) -> MessageFieldError | None:
    """The error for a keyword call of ``record`` missing or misnaming fields, else None."""
    unknown = [name for name in given if name not in known]
    if unknown:
        return MessageFieldError(f"unknown field of {record}", path=unknown[0])
    missing = [name for name in required if name not in given]
    if not missing:
        return None
    listed = ", ".join(missing)
    return MessageFieldError(f"field required: {record} needs {listed}", path=missing[0])


def named_fields(cls: type[T]) -> type[T]:
    """Make ``cls(...)`` raise :class:`MessageFieldError` for a missing or unknown field."""
    init: Callable[..., None] = cls.__init__
    all_fields = fields(cls)  # pyright: ignore[reportArgumentType]
    known = frozenset(f.name for f in all_fields if f.init)
    required = tuple(
        f.name
        for f in all_fields
        if f.init and f.default is MISSING and f.default_factory is MISSING
    )
    record = cls.__name__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except TypeError:
            error = None if args else field_error(record, kwargs, known, required)
            if error is None:
                raise
            raise error from None

    cls.__init__ = __init__  # type: ignore[method-assign]
    return cls
