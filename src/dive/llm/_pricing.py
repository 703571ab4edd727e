"""Cost from the maintained ``genai-prices`` package, with a user override.

``cost_of`` returns ``None`` (unknown) when the model is not priced — never a made-up zero.
Web searches are priced per request: ``genai-prices`` carries the rate per model (Anthropic:
$10 per 1,000 searches); where it has none, Anthropic models use ``WEB_SEARCH_PER_THOUSAND``
(Anthropic's published price) and other providers' cost is unknown. A ``PricingInfo``
override uses its ``web_search_per_thousand``. Long-context tiers (a higher price for a request
whose input passes a threshold) come from ``genai-prices`` per model, or from
``PricingInfo(long_context_threshold=..., long_context=PricingInfo(...))``. Costs are computed
per model call (tiers depend on one request's input) and summed.
Web fetches carry no per-request price (their content is billed as input tokens).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from dive.errors import UserError
from dive.llm._usage import Usage

__all__ = ["PricingInfo", "cost_of"]

WEB_SEARCH_PER_THOUSAND = 10.0
"""Anthropic's list price of its web search tool: $10 per 1,000 searches."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PricingInfo:
    """Private pricing, in dollars per million tokens (overrides ``genai-prices``).

    Attributes:
        input_per_mtok: uncached input.
        output_per_mtok: output.
        cache_write_5m_per_mtok: 5-minute cache writes (default 1.25 x input).
        cache_write_1h_per_mtok: 1-hour cache writes (default 2 x input).
        cache_read_per_mtok: cache reads (default 0.1 x input).
        web_search_per_thousand: dollars per 1,000 web searches (default $10, Anthropic's
            list price).
        long_context_threshold: input tokens (all buckets) above which a request is priced
            at ``long_context`` instead (long-context tiers); None: one tier.
        long_context: the prices of a request above ``long_context_threshold``.
    """

    input_per_mtok: float
    output_per_mtok: float
    cache_write_5m_per_mtok: float | None = None
    cache_write_1h_per_mtok: float | None = None
    cache_read_per_mtok: float | None = None
    web_search_per_thousand: float = WEB_SEARCH_PER_THOUSAND
    long_context_threshold: int | None = None
    long_context: PricingInfo | None = None

    def __post_init__(self) -> None:
        if (self.long_context_threshold is None) != (self.long_context is None):
            raise UserError(
                "PricingInfo: give long_context_threshold and long_context together (the "
                "prices above the threshold), or neither"
            )
        if self.long_context_threshold is not None and self.long_context_threshold < 0:
            raise UserError("PricingInfo(long_context_threshold=...) must not be negative")

    def cost(self, usage: Usage) -> float:
        """The cost of ``usage`` (one request's, for tiers) in dollars at these prices.

        Args:
            usage: the usage to price.
        """
        tier = self.long_context
        if tier is not None and usage.total_input_tokens > (self.long_context_threshold or 0):
            return tier.cost(usage)
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
        searches = (usage.web_search_requests or 0) * self.web_search_per_thousand / 1000
        return total / 1_000_000 + searches


def cost_of(
    usage: Usage, *, provider: str, model: str, override: PricingInfo | None = None
) -> float | None:
    """The cost of ``usage`` in dollars, or None when the price is unknown.

    Args:
        usage: the tokens and server tool requests to price.
        provider: the ``genai-prices`` provider id (``anthropic``, ``openai``, ``google``…).
        model: the model name as requested.
        override: private prices to use instead of ``genai-prices``.
    """
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
        web_searches=usage.web_search_requests or None,
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = calc_price(priced, model_ref=model, provider_id=provider)
    except LookupError:
        return None
    total = float(result.total_price)
    searches = usage.web_search_requests or 0
    if searches and getattr(result.model_price, "web_searches_kcount", None) is None:
        if provider != "anthropic":
            return None  # searches ran, and their price is unknown
        total += searches * WEB_SEARCH_PER_THOUSAND / 1000
    return total
