"""Print the span tree of a tool loop: dive's OpenTelemetry spans on the console.

Runs offline (scripted model)::

    uv run python examples/otel_console.py

Needs the ``otel`` extra and the OpenTelemetry SDK (``pip install opentelemetry-sdk``).
"""

from __future__ import annotations

import asyncio

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dive import Agent, tool
from dive.otel import OTelTracer
from dive.testing import ScriptedModel, call, text, tool_use


@tool(effect_type="read_only")
async def weather(city: str) -> str:
    """Today's weather in ``city``."""
    return f"{city}: 21 C, clear"


def print_tree(spans: list[ReadableSpan]) -> None:
    children: dict[int | None, list[ReadableSpan]] = {}
    for s in spans:
        parent = s.parent.span_id if s.parent is not None else None
        children.setdefault(parent, []).append(s)

    def show(span: ReadableSpan, depth: int) -> None:
        attrs = dict(span.attributes or {})
        ms = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
        keys = ("gen_ai.request.model", "gen_ai.tool.name", "gen_ai.usage.output_tokens")
        extra = ", ".join(f"{k}={attrs[k]}" for k in keys if k in attrs)
        print(f"{'  ' * depth}{span.name}  ({ms:.1f} ms{', ' + extra if extra else ''})")
        assert span.context is not None
        for child in sorted(
            children.get(span.context.span_id, []), key=lambda c: c.start_time or 0
        ):
            show(child, depth + 1)

    for root in children.get(None, []):
        show(root, 0)


async def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = ScriptedModel(
        [
            tool_use(call("weather", {"city": "Oslo"}), call("weather", {"city": "Bergen"})),
            text("Oslo and Bergen are both clear today."),
        ]
    )
    agent = Agent(
        model=model, tools=[weather], name="forecaster", tracer=OTelTracer(tracer_provider=provider)
    )
    result = await agent.run("Weather in Oslo and Bergen?")
    print(result.output)
    print_tree(list(exporter.get_finished_spans()))


if __name__ == "__main__":
    asyncio.run(main())
