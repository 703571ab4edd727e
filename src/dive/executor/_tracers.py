"""Tracers of executions: the one ``dive.tracing.Tracer`` protocol, installed per response type.

An execution reaches a tracer in two ways. Its loop turns emit the loop's spans
(``invoke_agent``, ``chat``, ``execute_tool``) to a ``dive.tracing.Tracer``: the one given as
``Executor(tracer=...)`` and the one installed for its response type. When it ends, however
it ends, its ``ExecutionTrace`` goes to each of those that defines the optional method
``record(trace)`` (the ``TraceRecorder`` protocol, like the optional ``add_retry`` of a chat
span). One object may do both. ``use_tracer(Verdict, tracer)`` installs a tracer for the
executions producing ``Verdict`` in the current context (a context variable, so concurrent
tasks can each have their own); an object with only ``record`` is accepted there too. With
no recorder the trace's metadata is logged at debug level.

``dive.executor.Tracer`` is ``dive.tracing.Tracer``: the same protocol under the name the
executor always exported.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, Protocol, cast

from dive.executor._trace import ExecutionTrace
from dive.tracing import Tracer

__all__ = ["TraceRecorder", "Tracer", "record_trace", "span_tracer", "use_tracer"]

log = logging.getLogger("dive.executor")

_SPAN_METHODS = ("start_agent_run", "start_chat", "start_tool_call")


class TraceRecorder(Protocol):
    """Receives every finished execution trace (a tracer's optional ``record`` method)."""

    def record(self, trace: ExecutionTrace) -> None:
        """Called once per execution, when it ended (any exit), with its trace.

        Args:
            trace: the finished execution's trace.
        """
        ...


_TRACERS: contextvars.ContextVar[Mapping[type, Tracer | TraceRecorder]] = contextvars.ContextVar(
    "dive_executor_tracers", default=MappingProxyType({})
)


@contextmanager
def use_tracer(
    response_type: type[Any], tracer: Tracer | TraceRecorder
) -> Generator[Tracer | TraceRecorder]:
    """Trace the executions producing ``response_type`` with ``tracer`` (in a ``with``).

    Args:
        response_type: the response model whose executions are traced.
        tracer: a ``dive.tracing.Tracer`` (their spans), an object with ``record(trace)``
            (their finished traces), or one object with both.
    """
    current = dict(_TRACERS.get())
    current[response_type] = tracer
    token = _TRACERS.set(MappingProxyType(current))
    try:
        yield tracer
    finally:
        _TRACERS.reset(token)


def span_tracer(response_type: type[Any]) -> Tracer | None:
    """The tracer installed for ``response_type`` when it takes spans, else None."""
    tracer = _TRACERS.get().get(response_type)
    if tracer is None or not all(callable(getattr(tracer, m, None)) for m in _SPAN_METHODS):
        return None
    return cast(Tracer, tracer)


def record_trace(response_type: type[Any], trace: ExecutionTrace, *others: object) -> None:
    """Hand ``trace`` to the recorders (installed for the type, then ``others``). Never raises.

    With none of them defining ``record``, the trace's metadata is logged at debug level.
    """
    recorders: list[Any] = []
    for tracer in (_TRACERS.get().get(response_type), *others):
        record = getattr(tracer, "record", None)
        if callable(record) and not any(r is tracer for r in recorders):
            recorders.append(tracer)
    if not recorders:
        log.debug(
            "execution %s: %d round(s), %d tool call(s), error=%s",
            trace.id,
            len(trace.rounds),
            len(trace.tool_calls),
            trace.error,
        )
    for tracer in recorders:
        try:
            tracer.record(trace)
        except Exception:
            log.exception("the tracer for %s failed on trace %s", response_type.__name__, trace.id)
