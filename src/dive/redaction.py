"""Secret redaction for error texts.

A provider error may echo the API key it was given (a proxy's "invalid key sk-…" page, an
SDK message quoting a header). Before an error text is stored in a turn record, sent to the
model in an outcome note or a tool result, returned as ``RunResult.error`` or handed to a
tracer, dive replaces with ``[redacted]``:

- the value of every environment variable whose name ends in ``_API_KEY``, ``_TOKEN`` or
  ``_SECRET`` (at least 8 characters long), read when the text is redacted;
- every value registered with :func:`register_secret` (providers register keys passed as
  ``api_key=``);
- common key shapes: ``sk-…`` and ``sk-ant-…`` keys, Google ``AIza…`` keys, and the token of
  ``Bearer …`` / ``x-api-key: …`` / ``api_key=…`` fragments.

Redaction only ever shortens what an error says about credentials; everything else in the
text is kept, so the error still says what happened.
"""

from __future__ import annotations

import os
import re
from typing import Any, cast

__all__ = ["REDACTED", "redact", "redact_exception", "register_secret"]

REDACTED = "[redacted]"

_SHAPES = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]{6,}"
    r"|sk-[A-Za-z0-9_\-]{16,}"
    r"|AIza[0-9A-Za-z_\-]{20,}"
    r"|(?i:(?<=bearer )[A-Za-z0-9._~+/\-]{8,}=*)"
    r"|(?i:(?<=x-api-key: )[^\s\"',;]{8,})"
    r"|(?i:(?<=x-api-key:)[^\s\"',;]{8,})"
    r"|(?i:(?<=api_key=)[^\s\"',;&]{8,})"
    r"|(?i:(?<=api-key=)[^\s\"',;&]{8,})"
)
_ENV_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET")
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Redact ``value`` from every error text from now on (ignored when shorter than 8).

    Args:
        value: the secret (None and short values are ignored).
    """
    if value and len(value) >= 8:
        _registered.add(value)


def _secrets() -> list[str]:
    found = set(_registered)
    for name, value in os.environ.items():
        if name.endswith(_ENV_SUFFIXES) and len(value) >= 8:
            found.add(value)
    return sorted(found, key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with configured secrets and key-shaped tokens replaced by ``[redacted]``.

    Args:
        text: any text that may hold a secret.
    """
    if not text:
        return text
    for secret in _secrets():
        if secret in text:
            text = text.replace(secret, REDACTED)
    return _SHAPES.sub(REDACTED, text)


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _redact_value(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list | tuple):
        return type(value)(_redact_value(v) for v in value)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return value


_TEXT_ATTRIBUTES = ("body", "message", "details", "__notes__")
"""Attributes besides ``args`` in which exceptions carry what the server said (SDK errors keep
the message as ``message``, the parsed error as ``body`` or ``details``)."""


def _redact_attributes(exc: BaseException) -> None:
    args = exc.args
    cleaned = tuple(_redact_value(a) for a in args)
    if cleaned != args:
        exc.args = cleaned
    for name in _TEXT_ATTRIBUTES:
        try:
            value = getattr(exc, name, None)
        except Exception:  # a property that fails: nothing to redact there
            continue
        if value is None or not isinstance(value, str | dict | list | tuple):
            continue
        cleaned_value = _redact_value(value)
        if cleaned_value != value:
            try:
                setattr(exc, name, cleaned_value)
            except (AttributeError, TypeError):
                pass


def redact_exception(exc: BaseException) -> BaseException:
    """Redact ``exc`` and every exception chained to it, in place; return ``exc``.

    Redacted: the message arguments, the ``message``, ``body`` and ``details`` attributes
    vendor SDK errors carry, and notes; along ``__cause__`` and ``__context__`` (and the
    members of an exception group), so ``traceback.format_exception(exc)`` and
    ``logger.exception(...)`` print no secret either.

    Args:
        exc: the exception to redact.
    """
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        _redact_attributes(current)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        if isinstance(current, BaseExceptionGroup):
            todo.extend(cast("BaseExceptionGroup[BaseException]", current).exceptions)
    return exc
