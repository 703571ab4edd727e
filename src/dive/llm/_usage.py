"""Token usage with disjoint input buckets.

``input_tokens`` (uncached), ``cache_creation_input_tokens`` (cache write) and
``cache_read_input_tokens`` (cache read) never overlap; ``total_input_tokens`` sums them.
``reasoning_tokens`` is a subset of ``output_tokens``. Token counts are what was billed, so they
include passes the provider ran inside one call (Anthropic's server-side compaction).
``web_search_requests`` and ``web_fetch_requests`` count server tool requests, which are billed
per request. Unknown is distinct from zero:
``cost=None`` means the price is unknown, a ``None`` breakdown means the provider did not
report it, and ``known=False`` marks counts that are lower bounds because some model call's
usage never arrived (a stream that died before its usage frame).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from pydantic import ConfigDict

from dive.messages.codec import FORBID_EXTRA, decode, to_jsonable

__all__ = ["Usage"]


def _tier(a: str | None, b: str | None) -> str | None:
    if a is None or a == b:
        return b
    if b is None:
        return a
    return "mixed"


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Tokens (and cost) of one or more model calls.

    Attributes:
        input_tokens: uncached input tokens.
        output_tokens: output tokens (reasoning included).
        cache_creation_input_tokens: input tokens written to the prompt cache.
        cache_read_input_tokens: input tokens read from the prompt cache.
        cache_creation_5m_input_tokens: the 5-minute part of the cache writes (None: unreported).
        cache_creation_1h_input_tokens: the 1-hour part of the cache writes (None: unreported).
        reasoning_tokens: the reasoning part of ``output_tokens`` (None: unreported).
        web_search_requests: server-side web searches run (None: unreported).
        web_fetch_requests: server-side web fetches run (None: unreported).
        service_tier: the tier that served the calls (``mixed`` when they differ).
        cost: dollars (None: the price is unknown).
        requests: how many model calls this sums.
        known: False when some call's usage never arrived (counts are lower bounds).
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_5m_input_tokens: int | None = None
    cache_creation_1h_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    web_search_requests: int | None = None
    web_fetch_requests: int | None = None
    service_tier: str | None = None
    cost: float | None = None
    requests: int = 0
    known: bool = True

    ZERO: ClassVar[Usage]

    @property
    def total_input_tokens(self) -> int:
        """Uncached + cache write + cache read."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @property
    def total_tokens(self) -> int:
        """All input plus output tokens."""
        return self.total_input_tokens + self.output_tokens

    def add(self, other: Usage) -> Usage:
        """The sum of two usages. A cost is known only when both costs are known.

        Args:
            other: the usage to add.
        """
        zero = Usage.ZERO
        if other is zero:
            return self
        if self is zero:
            return other
        a, b = self, other  # the optional counts: None (unreported) unless either side has one
        c5, c5o = a.cache_creation_5m_input_tokens, b.cache_creation_5m_input_tokens
        c1, c1o = a.cache_creation_1h_input_tokens, b.cache_creation_1h_input_tokens
        r, ro = a.reasoning_tokens, b.reasoning_tokens
        ws, wso = a.web_search_requests, b.web_search_requests
        wf, wfo = a.web_fetch_requests, b.web_fetch_requests
        tier, tier_o = a.service_tier, b.service_tier
        return Usage(
            input_tokens=a.input_tokens + b.input_tokens,
            output_tokens=a.output_tokens + b.output_tokens,
            cache_creation_input_tokens=a.cache_creation_input_tokens
            + b.cache_creation_input_tokens,
            cache_read_input_tokens=a.cache_read_input_tokens + b.cache_read_input_tokens,
            cache_creation_5m_input_tokens=c5o if c5 is None else c5 if c5o is None else c5 + c5o,
            cache_creation_1h_input_tokens=c1o if c1 is None else c1 if c1o is None else c1 + c1o,
            reasoning_tokens=ro if r is None else r if ro is None else r + ro,
            web_search_requests=wso if ws is None else ws if wso is None else ws + wso,
            web_fetch_requests=wfo if wf is None else wf if wfo is None else wf + wfo,
            service_tier=tier if tier == tier_o else _tier(tier, tier_o),
            cost=None if a.cost is None or b.cost is None else a.cost + b.cost,
            requests=a.requests + b.requests,
            known=a.known and b.known,
        )

    __add__ = add

    def with_known(self, known: bool) -> Usage:
        """A copy with ``known`` set.

        Args:
            known: False when some call's usage never arrived.
        """
        return replace(self, known=known)

    def with_cost(self, cost: float | None) -> Usage:
        """A copy with ``cost`` set.

        Args:
            cost: dollars, or None when the price is unknown.
        """
        return replace(self, cost=cost)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (defaults omitted)."""
        return to_jsonable(self)

    @classmethod
    def from_dict(cls, data: Any) -> Usage:
        """Decode and validate.

        Args:
            data: plain JSON data, as ``to_dict`` gives it.
        """
        return decode(Usage, data)

    def __str__(self) -> str:
        """One line: input by bucket, output (with reasoning when reported), requests, cost.

        E.g. ``input 1,200 (uncached 200, cache write 0, cache read 1,000) · output 350
        (reasoning 120) · 2 requests · $0.0123``. An unknown price reads ``cost unknown``
        (never ``$0.00``) once anything was used; with ``known=False`` every count and the
        cost carry ``≥``, since they are lower bounds.
        """
        at_least = "" if self.known else "≥"

        def n(count: int) -> str:
            return f"{at_least}{count:,}"

        line = (
            f"input {n(self.total_input_tokens)} (uncached {n(self.input_tokens)}, "
            f"cache write {n(self.cache_creation_input_tokens)}, "
            f"cache read {n(self.cache_read_input_tokens)}) · output {n(self.output_tokens)}"
        )
        if self.reasoning_tokens is not None:
            line += f" (reasoning {n(self.reasoning_tokens)})"
        line += f" · {n(self.requests)} request{'' if self.requests == 1 else 's'}"
        return f"{line} · {self._cost_text(at_least)}"

    def _cost_text(self, at_least: str) -> str:
        cost = self.cost
        if cost is None:
            used = self.total_tokens or self.web_search_requests or self.web_fetch_requests
            return "cost unknown" if used or not self.known else "$0.00"
        if cost == 0:
            return f"{at_least}$0.00"
        if cost < 0.0001:
            return "<$0.0001" if self.known else "≥$0.0000"
        return f"{at_least}${cost:,.2f}" if cost >= 1 else f"{at_least}${cost:.4f}"


Usage.ZERO = Usage(cost=0.0)
"""The identity for sums: nothing used, nothing spent (cost known to be zero)."""
