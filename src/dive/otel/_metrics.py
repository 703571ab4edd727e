"""The metric instruments of ``OTelTracer`` (GenAI client metrics plus dive's own)."""

from __future__ import annotations

from typing import Any

from opentelemetry import metrics

__all__ = ["Instruments"]

TOKEN_BUCKETS = [float(4**i) for i in range(14)]  # 1, 4, 16 … 67,108,864
DURATION_BUCKETS = [
    0.01,
    0.02,
    0.04,
    0.08,
    0.16,
    0.32,
    0.64,
    1.28,
    2.56,
    5.12,
    10.24,
    20.48,
    40.96,
    81.92,
]


class Instruments:
    """One set of instruments per tracer."""

    def __init__(self, meter_provider: Any = None) -> None:
        meter = metrics.get_meter("dive", meter_provider=meter_provider)
        self.base: dict[str, Any] = {}
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Tokens used per model call",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="Duration of a model call",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.first_chunk = meter.create_histogram(
            "gen_ai.client.operation.time_to_first_chunk",
            unit="s",
            description="Time to the first stream event of a model call",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.tool_calls = meter.create_counter(
            "dive.tool.calls", unit="{call}", description="Tool calls by tool and outcome"
        )
        self.tool_duration = meter.create_histogram(
            "dive.tool.duration", unit="s", description="Tool call duration"
        )
        self.turns = meter.create_counter(
            "dive.turns", unit="{turn}", description="Turns by status and reason"
        )
        self.cost = meter.create_counter("dive.cost", unit="USD", description="Model cost")
