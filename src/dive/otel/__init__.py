"""OpenTelemetry for dive (extra ``otel``): ``OTelTracer`` spans and metrics.

``Agent(tracer=OTelTracer())`` sends every run as a trace — ``invoke_agent`` with ``chat`` and
``execute_tool`` spans under it — following the GenAI semantic conventions, plus token,
duration, time-to-first-chunk, tool-call, turn and cost metrics. See ``docs/observability.md``.
"""

try:
    import opentelemetry.trace as _otel_trace
except ImportError as exc:  # pragma: no cover - depends on the install
    from dive.errors import MissingExtraError

    raise MissingExtraError(
        "dive.otel needs OpenTelemetry: pip install 'dive-agents[otel]'"
    ) from exc

from dive.otel._tracer import OTelTracer

del _otel_trace

__all__ = ["OTelTracer"]

from dive._public import publish as _publish  # noqa: E402

_publish(__name__, globals(), __all__)
