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
from typing import Any

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


def redact_exception(exc: BaseException) -> BaseException:
    """Redact ``exc``'s message arguments (and a provider error's ``body``) in place.

    Returns ``exc``; its chained causes are redacted too.

    Args:
        exc: the exception to redact.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        args = current.args
        cleaned = tuple(_redact_value(a) for a in args)
        if cleaned != args:
            current.args = cleaned
        body = getattr(current, "body", None)
        if body is not None:
            cleaned_body = _redact_value(body)
            if cleaned_body != body:
                try:
                    current.body = cleaned_body  # type: ignore[attr-defined]
                except AttributeError:
                    pass
        current = current.__cause__ or current.__context__
    return exc
