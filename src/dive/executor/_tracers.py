"""Tracers: who receives an execution's trace when it ends (any exit).

``use_tracer(Verdict, tracer)`` installs a tracer for executions producing ``Verdict`` in
the current context (a context variable, so concurrent tasks can each have their own). The
default logs the trace's metadata. ``by_checks(**checks)`` runs eval checks on each trace.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, Protocol

from dive.executor._trace import ExecutionTrace

__all__ = ["Tracer", "record_trace", "use_tracer"]

log = logging.getLogger("dive.executor")


class Tracer(Protocol):
    """Receives every finished trace."""

    def record(self, trace: ExecutionTrace) -> None:
        """Receive a finished execution's trace.

        Args:
            trace: the trace.
        """
        ...


_TRACERS: contextvars.ContextVar[Mapping[type, Tracer]] = contextvars.ContextVar(
    "dive_executor_tracers", default=MappingProxyType({})
)


@contextmanager
def use_tracer(response_type: type[Any], tracer: Tracer) -> Generator[Tracer]:
    """Send the traces of executions producing ``response_type`` to ``tracer`` (in a ``with``).

    Args:
        response_type: the response type whose executions are traced.
        tracer: receives each trace (``tracer.record(trace)``).
    """
    current = dict(_TRACERS.get())
    current[response_type] = tracer
    token = _TRACERS.set(MappingProxyType(current))
    try:
        yield tracer
    finally:
        _TRACERS.reset(token)


def record_trace(response_type: type[Any], trace: ExecutionTrace) -> None:
    """Hand ``trace`` to the installed tracer, or log its metadata. Never raises."""
    tracer = _TRACERS.get().get(response_type)
    try:
        if tracer is None:
            log.debug(
                "execution %s: %d round(s), %d tool call(s), error=%s",
                trace.id,
                len(trace.rounds),
                len(trace.tool_calls),
                trace.error,
            )
        else:
            tracer.record(trace)
    except Exception:
        log.exception("the tracer for %s failed on trace %s", response_type.__name__, trace.id)
