"""Costs: the ideal-caching comparison and the per-session chart (server-side SVG).

The ideal-caching figure is a floor: the same calls with every input token read from the
prompt cache (output unchanged), priced by ``dive.llm.cost_of`` for the model named
``provider:model``. A turn record holds its cost but not its model's name, so the figure
needs the model (from exported spans or the viewer's ``model=`` option); without it, None.

``cost_chart`` draws tokens (input and output, stacked bars) and cost (a line on its own
scale) over a session's turns as an accessible SVG: a title, a description, and one
``<title>`` per bar that screen readers and tooltips read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from html import escape

from dive.llm import Usage, cost_of

__all__ = ["ChartPoint", "cost_chart", "ideal_cost", "ideal_usage", "money"]

_W, _H, _PAD, _TOP = 640, 200, 44, 16


def ideal_usage(usage: Usage) -> Usage:
    """``usage`` with every input token (uncached, written, read) a cache read."""
    return replace(
        usage,
        input_tokens=0,
        cache_creation_input_tokens=0,
        cache_creation_5m_input_tokens=None,
        cache_creation_1h_input_tokens=None,
        cache_read_input_tokens=usage.total_input_tokens,
        cost=None,
    )


def ideal_cost(usage: Usage, model: str | None) -> float | None:
    """What ``usage`` would cost with ideal caching, or None when the model is not priced.

    Args:
        usage: the recorded usage.
        model: ``provider:model`` (``anthropic:claude-sonnet-4-5``), or None.
    """
    if not model or ":" not in model:
        return None
    provider, _, name = model.partition(":")
    return cost_of(ideal_usage(usage), provider=provider, model=name)


def money(value: float | None) -> str:
    """Dollars for people: ``$0.0123``; ``unknown`` for None."""
    if value is None:
        return "unknown"
    if value == 0:
        return "$0"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChartPoint:
    """One turn on the chart."""

    label: str
    input_tokens: int
    output_tokens: int
    cost: float | None


def _bars(points: Sequence[ChartPoint], top: int, step: float) -> list[str]:
    out: list[str] = []
    plot_h = _H - _PAD - _TOP
    width = max(2.0, step * 0.6)
    for i, p in enumerate(points):
        x = _PAD + i * step + (step - width) / 2
        hi = plot_h * p.input_tokens / top
        ho = plot_h * p.output_tokens / top
        base = _H - _PAD
        tip = escape(
            f"{p.label}: {p.input_tokens:,} input, {p.output_tokens:,} output tokens, "
            f"cost {money(p.cost)}"
        )
        out.append(
            f'<g class="bar"><title>{tip}</title>'
            f'<rect class="input" x="{x:.1f}" y="{base - hi:.1f}" width="{width:.1f}" '
            f'height="{hi:.1f}"/>'
            f'<rect class="output" x="{x:.1f}" y="{base - hi - ho:.1f}" width="{width:.1f}" '
            f'height="{ho:.1f}"/></g>'
        )
    return out


def _cost_line(points: Sequence[ChartPoint], step: float) -> list[str]:
    costs = [p.cost for p in points]
    known = [c for c in costs if c is not None]
    if not known or max(known) <= 0:
        return []
    top = max(known)
    plot_h = _H - _PAD - _TOP
    coords = [
        (_PAD + i * step + step / 2, _H - _PAD - plot_h * c / top)
        for i, c in enumerate(costs)
        if c is not None
    ]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    dots = "".join(f'<circle class="cost" cx="{x:.1f}" cy="{y:.1f}" r="3"/>' for x, y in coords)
    label = escape(f"max {money(top)}")
    return [
        f'<polyline class="cost" points="{path}"/>',
        dots,
        f'<text class="axis" x="{_W - 4}" y="{_TOP - 4}" text-anchor="end">cost, {label}</text>',
    ]


def cost_chart(points: Sequence[ChartPoint], *, title: str = "Tokens and cost per turn") -> str:
    """An SVG of tokens (stacked bars) and cost (a line) per turn; ``""`` without points."""
    if not points:
        return ""
    top = max(1, max(p.input_tokens + p.output_tokens for p in points))
    step = (_W - 2 * _PAD) / len(points)
    total_cost = [p.cost for p in points]
    known = sum(c for c in total_cost if c is not None)
    desc = (
        f"{len(points)} turns; {sum(p.input_tokens for p in points):,} input and "
        f"{sum(p.output_tokens for p in points):,} output tokens; cost {money(known)}"
        + (" (some turns unpriced)" if None in total_cost else "")
    )
    labels = "".join(
        f'<text class="axis" x="{_PAD + i * step + step / 2:.1f}" y="{_H - _PAD + 14}" '
        f'text-anchor="middle">{escape(p.label)}</text>'
        for i, p in enumerate(points)
        if len(points) <= 24 or i % max(1, len(points) // 12) == 0
    )
    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" '
        'role="img" aria-labelledby="chart-title chart-desc">',
        f'<title id="chart-title">{escape(title)}</title>',
        f'<desc id="chart-desc">{escape(desc)}</desc>',
        f'<line class="axis" x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}"/>',
        f'<text class="axis" x="4" y="{_TOP - 4}">tokens, max {top:,}</text>',
        *_bars(points, top, step),
        *_cost_line(points, step),
        labels,
        f'<g class="legend"><rect class="input" x="{_PAD}" y="{_H - 18}" width="10" height="10"/>'
        f'<text x="{_PAD + 14}" y="{_H - 9}">input</text>'
        f'<rect class="output" x="{_PAD + 60}" y="{_H - 18}" width="10" height="10"/>'
        f'<text x="{_PAD + 74}" y="{_H - 9}">output</text>'
        f'<circle class="cost" cx="{_PAD + 135}" cy="{_H - 13}" r="4"/>'
        f'<text x="{_PAD + 143}" y="{_H - 9}">cost</text></g>',
        "</svg>",
    ]
    return "".join(parts)
