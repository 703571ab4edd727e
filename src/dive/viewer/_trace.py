"""The trace view: a waterfall of a turn's model and tool calls.

From the record alone the waterfall has one bar per model response, timed from the step
before it (the turn's start, or the previous response: a response after a tool batch is
timed together with that batch), and the tool calls under the response that made them.

With OpenTelemetry spans exported to a file (``ConsoleSpanExporter`` output, or one span's
``to_json()`` per line: concatenated JSON objects), the turn's ``invoke_agent`` spans
(``dive.turn.id``; a resumed turn has one per run) and their descendants give exact bars,
with each ``chat`` span's tokens and cost.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from dive.messages.codec import empty
from dive.turns import Turn

__all__ = ["Bar", "SpanRecord", "load_spans", "record_bars", "span_bars", "turn_model"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanRecord:
    """One exported span."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    start: datetime
    end: datetime
    attributes: Mapping[str, Any] = field(default_factory=empty)


@dataclass(frozen=True, slots=True, kw_only=True)
class Bar:
    """One row of the waterfall: offsets in seconds from the turn's start."""

    label: str
    kind: str
    depth: int
    start: float
    seconds: float
    state: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _span(data: Mapping[str, Any]) -> SpanRecord | None:
    try:
        context = cast(Mapping[str, Any], data["context"])
        return SpanRecord(
            name=str(data["name"]),
            trace_id=str(context["trace_id"]),
            span_id=str(context["span_id"]),
            parent_id=cast(str | None, data.get("parent_id")),
            start=_time(str(data["start_time"])),
            end=_time(str(data["end_time"])),
            attributes=dict(cast(Mapping[str, Any], data.get("attributes") or {})),
        )
    except (KeyError, TypeError, ValueError):
        return None


def load_spans(path: str | Path) -> list[SpanRecord]:
    """Every span in the file (objects that are not spans are skipped; a missing file: [])."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    decoder = json.JSONDecoder()
    out: list[SpanRecord] = []
    i = 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        try:
            data, i = decoder.raw_decode(text, i)
        except ValueError:
            return out  # a partly written last span
        if isinstance(data, dict):
            span = _span(cast(Mapping[str, Any], data))
            if span is not None:
                out.append(span)


def _descendants(spans: Sequence[SpanRecord], root: SpanRecord) -> list[tuple[int, SpanRecord]]:
    children: dict[str, list[SpanRecord]] = {}
    for s in spans:
        if s.trace_id == root.trace_id and s.parent_id is not None:
            children.setdefault(s.parent_id, []).append(s)
    out: list[tuple[int, SpanRecord]] = []

    def walk(span: SpanRecord, depth: int) -> None:
        out.append((depth, span))
        for child in sorted(children.get(span.span_id, []), key=lambda c: c.start):
            walk(child, depth + 1)

    walk(root, 0)
    return out


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) else None


def span_bars(spans: Sequence[SpanRecord], turn_id: str) -> list[Bar]:
    """The waterfall of the turn's spans (empty when none were exported)."""
    roots = sorted(
        (s for s in spans if s.attributes.get("dive.turn.id") == turn_id), key=lambda s: s.start
    )
    if not roots:
        return []
    t0 = roots[0].start
    bars: list[Bar] = []
    for root in roots:
        for depth, s in _descendants(spans, root):
            a = s.attributes
            cost = a.get("dive.cost")
            bars.append(
                Bar(
                    label=s.name,
                    kind=str(a.get("gen_ai.operation.name", "span")),
                    depth=depth,
                    start=(s.start - t0).total_seconds(),
                    seconds=max(0.0, (s.end - s.start).total_seconds()),
                    state="error" if a.get("dive.tool.is_error") else None,
                    input_tokens=_int(a.get("gen_ai.usage.input_tokens")),
                    output_tokens=_int(a.get("gen_ai.usage.output_tokens")),
                    cost=float(cost) if isinstance(cost, int | float) else None,
                )
            )
    return bars


def turn_model(spans: Sequence[SpanRecord], turn_id: str) -> str | None:
    """``provider:model`` of the turn's first run span, if exported."""
    for s in spans:
        if s.attributes.get("dive.turn.id") == turn_id:
            provider = s.attributes.get("gen_ai.provider.name")
            model = s.attributes.get("gen_ai.request.model")
            if isinstance(provider, str) and isinstance(model, str):
                return f"{provider}:{model}"
    return None


def record_bars(turn: Turn) -> list[Bar]:
    """The waterfall the record alone gives (see the module docstring).

    A tool call's bar spans the window it ran in: from the response that made it to the next
    response (or the turn's end), since the record times responses, not tool calls.
    """
    start = turn.created_at
    if start is None:
        return []
    states = {c.id: c.state for c in turn.tool_calls}
    times = [m.created_at for m in turn.messages if m.role == "assistant" and m.created_at]
    ends = [*times[1:], turn.finished_at or (times[-1] if times else start)]
    bars: list[Bar] = []
    begin = 0.0
    after_tools = False
    n = 0
    for m in turn.messages:
        if m.role == "tool":
            after_tools = True
        if m.role != "assistant" or m.created_at is None:
            continue
        at = (m.created_at - start).total_seconds()
        end = (ends[n] - start).total_seconds()
        n += 1
        label = f"model call {n}" + (
            " (timed with the tool calls before it)" if after_tools else ""
        )
        bars.append(
            Bar(label=label, kind="chat", depth=0, start=begin, seconds=max(0.0, at - begin))
        )
        bars.extend(
            Bar(
                label=c.name,
                kind="execute_tool",
                depth=1,
                start=at,
                seconds=max(0.0, end - at),
                state=states.get(c.id),
            )
            for c in m.tool_calls
        )
        begin = at
        after_tools = False
    return bars
