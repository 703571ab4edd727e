"""Settings warnings: a provider's note that it dropped, clamped or mapped a setting.

The texts are shared (a caller may match on them). A provider logs each distinct warning once
per scope: once per model object by default, and once per block inside
``settings_warnings()``, which the executor opens around each ``execute`` so every execution
says what was adjusted for it. A scope may ``silence`` warnings its caller has no use for (the
executor's default temperature, which the caller never set, is dropped without a word).
The scope lives in a context variable, so it reaches the provider through ``await`` and one
run's scope never reaches another's.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterable
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = [
    "EFFORT_DROPPED",
    "TEMPERATURE_DROPPED",
    "THINKING_ADAPTIVE",
    "WarnOnce",
    "effort_clamped",
    "settings_warnings",
    "unknown_model",
]

TEMPERATURE_DROPPED = "dropping temperature: not supported by this model"
THINKING_ADAPTIVE = "mapping thinking_budget to adaptive thinking"
EFFORT_DROPPED = "dropping effort: not supported by this model"


def effort_clamped(effort: str, to: str) -> str:
    """The warning for an effort level the model lacks, sent as ``to``."""
    return f"clamping effort: {effort!r} is not supported by this model, sending {to!r}"


def unknown_model(model: str) -> str:
    """The warning for a model id the provider's capability table does not know."""
    return f"unknown model {model!r}: using conservative capabilities"


_SCOPE: ContextVar[set[str] | None] = ContextVar("dive_settings_warnings", default=None)


@contextmanager
def settings_warnings(*, silence: Iterable[str] = ()) -> Generator[None]:
    """Inside the block, each distinct settings warning is logged once (``silence``: never).

    Args:
        silence: warning texts not to log inside the block.
    """
    token = _SCOPE.set(set(silence))
    try:
        yield
    finally:
        _SCOPE.reset(token)


class WarnOnce:
    """Logs each distinct warning once: per ``settings_warnings`` block, else per instance.

    Args:
        log: the logger the warnings go to.
    """

    def __init__(self, log: logging.Logger) -> None:
        self._seen: set[str] = set()
        self._log = log

    def __call__(self, message: str) -> None:
        """Log ``message`` unless it was logged in this scope already."""
        seen = _SCOPE.get()
        if seen is None:
            seen = self._seen
        if message not in seen:
            seen.add(message)
            self._log.warning("%s", message)
