"""Cost from the maintained ``genai-prices`` package, with a user override.

``cost_of`` returns ``None`` (unknown) when the model is not priced — never a made-up zero.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from dive.llm._usage import Usage

__all__ = ["PricingInfo", "cost_of"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PricingInfo:
    """Private pricing, in dollars per million tokens (overrides ``genai-prices``)."""

    input_per_mtok: float
    output_per_mtok: float
    cache_write_5m_per_mtok: float | None = None
    cache_write_1h_per_mtok: float | None = None
    cache_read_per_mtok: float | None = None

    def cost(self, usage: Usage) -> float:
        write_1h = usage.cache_creation_1h_input_tokens or 0
        write_5m = usage.cache_creation_input_tokens - write_1h
        w5 = (
            self.cache_write_5m_per_mtok
            if self.cache_write_5m_per_mtok is not None
            else (self.input_per_mtok * 1.25)
        )
        w1 = (
            self.cache_write_1h_per_mtok
            if self.cache_write_1h_per_mtok is not None
            else (self.input_per_mtok * 2)
        )
        read = (
            self.cache_read_per_mtok
            if self.cache_read_per_mtok is not None
            else (self.input_per_mtok * 0.1)
        )
        total = (
            usage.input_tokens * self.input_per_mtok
            + usage.output_tokens * self.output_per_mtok
            + write_5m * w5
            + write_1h * w1
            + usage.cache_read_input_tokens * read
        )
        return total / 1_000_000


def cost_of(
    usage: Usage, *, provider: str, model: str, override: PricingInfo | None = None
) -> float | None:
    """The cost of ``usage`` in dollars, or None when the price is unknown."""
    if override is not None:
        return override.cost(usage)
    try:
        from genai_prices import Usage as PriceUsage
        from genai_prices import calc_price
    except ImportError:  # pragma: no cover - genai-prices is a core dependency
        return None
    priced = PriceUsage(
        input_tokens=usage.total_input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_input_tokens,
        cache_write_tokens=usage.cache_creation_input_tokens,
        cache_write_1h_tokens=usage.cache_creation_1h_input_tokens,
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = calc_price(priced, model_ref=model, provider_id=provider)
    except LookupError:
        return None
    return float(result.total_price)
