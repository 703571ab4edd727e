"""Usage: disjoint buckets, sums, unknowns and JSON (turns.md §18)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dive.errors import MessageValidationError
from dive.llm import PricingInfo, Usage, cost_of


def test_defaults() -> None:
    u = Usage()
    assert u.input_tokens == 0
    assert u.output_tokens == 0
    assert u.cache_creation_input_tokens == 0
    assert u.cache_read_input_tokens == 0
    assert u.cache_creation_5m_input_tokens is None
    assert u.cache_creation_1h_input_tokens is None
    assert u.reasoning_tokens is None
    assert u.service_tier is None
    assert u.cost is None
    assert u.requests == 0
    assert u.known is True


def test_input_buckets_are_disjoint_and_summed() -> None:
    u = Usage(
        input_tokens=10,
        cache_creation_input_tokens=200,
        cache_read_input_tokens=3000,
        output_tokens=7,
    )
    assert u.total_input_tokens == 3210
    assert u.total_tokens == 3217
    # Each bucket stays as given: no bucket contains another.
    assert u.input_tokens == 10
    assert u.cache_creation_input_tokens == 200
    assert u.cache_read_input_tokens == 3000


def test_reasoning_is_a_subset_of_output() -> None:
    u = Usage(input_tokens=1, output_tokens=50, reasoning_tokens=40)
    assert u.total_tokens == 51


def test_add_sums_counts() -> None:
    a = Usage(
        input_tokens=1,
        output_tokens=2,
        cache_creation_input_tokens=3,
        cache_read_input_tokens=4,
        requests=1,
    )
    b = Usage(
        input_tokens=10,
        output_tokens=20,
        cache_creation_input_tokens=30,
        cache_read_input_tokens=40,
        requests=2,
    )
    s = a.add(b)
    assert s.input_tokens == 11
    assert s.output_tokens == 22
    assert s.cache_creation_input_tokens == 33
    assert s.cache_read_input_tokens == 44
    assert s.requests == 3
    assert s.total_input_tokens == a.total_input_tokens + b.total_input_tokens
    assert a + b == s


def test_add_does_not_mutate() -> None:
    a = Usage(input_tokens=1)
    b = Usage(input_tokens=2)
    _ = a + b
    assert a == Usage(input_tokens=1)
    assert b == Usage(input_tokens=2)


_OPTIONAL_BREAKDOWNS: dict[str, Callable[[int | None], Usage]] = {
    "cache_creation_5m_input_tokens": lambda v: Usage(cache_creation_5m_input_tokens=v),
    "cache_creation_1h_input_tokens": lambda v: Usage(cache_creation_1h_input_tokens=v),
    "reasoning_tokens": lambda v: Usage(reasoning_tokens=v),
    "web_search_requests": lambda v: Usage(web_search_requests=v),
    "web_fetch_requests": lambda v: Usage(web_fetch_requests=v),
}


@pytest.mark.parametrize("field", list(_OPTIONAL_BREAKDOWNS))
@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [(None, None, None), (None, 3, 3), (3, None, 3), (2, 3, 5), (0, None, 0), (None, 0, 0)],
)
def test_optional_breakdowns(
    field: str, a: int | None, b: int | None, expected: int | None
) -> None:
    build = _OPTIONAL_BREAKDOWNS[field]
    assert getattr(build(a) + build(b), field) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (None, None, None),
        (None, 1.5, None),
        (1.5, None, None),
        (0.0, None, None),
        (None, 0.0, None),
        (1.5, 2.25, 3.75),
        (0.0, 0.0, 0.0),
    ],
)
def test_cost_is_known_only_when_both_are(
    a: float | None, b: float | None, expected: float | None
) -> None:
    assert (Usage(cost=a) + Usage(cost=b)).cost == expected


def test_unknown_cost_is_not_zero() -> None:
    s = Usage(cost=None) + Usage(cost=0.0)
    assert s.cost is None


def test_zero_has_known_zero_cost() -> None:
    assert Usage.ZERO.cost == 0.0
    assert Usage.ZERO.total_tokens == 0
    assert Usage.ZERO.requests == 0
    assert Usage.ZERO.known is True


KNOWN_COST_USAGES = [
    Usage(cost=0.0),
    Usage(input_tokens=5, output_tokens=6, cost=0.25, requests=1),
    Usage(
        input_tokens=1,
        output_tokens=2,
        cache_creation_input_tokens=3,
        cache_read_input_tokens=4,
        cache_creation_5m_input_tokens=1,
        cache_creation_1h_input_tokens=2,
        reasoning_tokens=1,
        service_tier="priority",
        cost=1.5,
        requests=2,
    ),
    Usage(output_tokens=9, cost=3.0, known=False),
]


@pytest.mark.parametrize("u", KNOWN_COST_USAGES)
def test_zero_is_the_identity_for_known_cost(u: Usage) -> None:
    assert Usage.ZERO + u == u
    assert u + Usage.ZERO == u


def test_zero_starts_a_sum() -> None:
    parts = [
        Usage(input_tokens=1, output_tokens=2, cost=0.5, requests=1),
        Usage(input_tokens=3, output_tokens=4, cost=0.25, requests=1),
    ]
    total = sum(parts, Usage.ZERO)
    assert total == Usage(input_tokens=4, output_tokens=6, cost=0.75, requests=2)


def test_zero_with_unknown_cost_gives_unknown_cost() -> None:
    assert (Usage.ZERO + Usage(input_tokens=1)).cost is None


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (None, None, None),
        ("standard", None, "standard"),
        (None, "standard", "standard"),
        ("standard", "standard", "standard"),
        ("standard", "priority", "mixed"),
        ("priority", "standard", "mixed"),
        ("mixed", "standard", "mixed"),
        ("standard", "mixed", "mixed"),
        ("mixed", None, "mixed"),
    ],
)
def test_service_tier_aggregates(a: str | None, b: str | None, expected: str | None) -> None:
    assert (Usage(service_tier=a) + Usage(service_tier=b)).service_tier == expected


def test_mixed_tier_stays_mixed_over_a_sum() -> None:
    tiers = ["standard", "standard", "priority", "standard"]
    total = sum((Usage(service_tier=t) for t in tiers), Usage.ZERO)
    assert total.service_tier == "mixed"


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [(True, True, True), (True, False, False), (False, True, False), (False, False, False)],
)
def test_known_false_propagates(a: bool, b: bool, expected: bool) -> None:
    assert (Usage(known=a) + Usage(known=b)).known is expected


def test_known_false_survives_a_long_sum() -> None:
    parts = [Usage(requests=1), Usage(requests=1, known=False), Usage(requests=1)]
    total = sum(parts, Usage.ZERO)
    assert total.known is False
    assert total.requests == 3


def test_with_cost() -> None:
    u = Usage(input_tokens=3)
    assert u.with_cost(0.5) == Usage(input_tokens=3, cost=0.5)
    assert u.with_cost(0.5).with_cost(None).cost is None
    assert u.cost is None


ROUND_TRIP = [
    Usage(),
    Usage.ZERO,
    Usage(known=False),
    Usage(
        input_tokens=472,
        output_tokens=89,
        cache_creation_input_tokens=12,
        cache_read_input_tokens=3000,
        cache_creation_5m_input_tokens=10,
        cache_creation_1h_input_tokens=2,
        reasoning_tokens=40,
        service_tier="standard",
        cost=0.0123,
        requests=2,
        known=False,
    ),
    Usage(cache_creation_5m_input_tokens=0, cache_creation_1h_input_tokens=0, reasoning_tokens=0),
    Usage(service_tier="mixed", cost=0.0),
    Usage(web_search_requests=3, web_fetch_requests=0),
]


@pytest.mark.parametrize("u", ROUND_TRIP)
def test_json_round_trip(u: Usage) -> None:
    data = u.to_dict()
    text = json.dumps(data)
    back = Usage.from_dict(json.loads(text))
    assert back == u
    assert back.to_dict() == data


def test_to_dict_omits_defaults_but_keeps_known_zero_and_unknown() -> None:
    assert Usage().to_dict() == {}
    assert Usage.ZERO.to_dict() == {"cost": 0.0}
    assert Usage(known=False).to_dict() == {"known": False}
    # A reported zero breakdown is not the same as an unreported one.
    assert Usage(reasoning_tokens=0).to_dict() == {"reasoning_tokens": 0}
    assert Usage(web_search_requests=0).to_dict() == {"web_search_requests": 0}


def test_server_tool_requests_are_unknown_until_reported() -> None:
    assert Usage().web_search_requests is None
    assert Usage().web_fetch_requests is None
    total = Usage(web_search_requests=2) + Usage() + Usage(web_search_requests=1)
    assert total.web_search_requests == 3
    assert total.web_fetch_requests is None


def test_web_searches_are_priced_by_genai_prices() -> None:
    tokens = Usage(input_tokens=1000, output_tokens=100)
    base = cost_of(tokens, provider="anthropic", model="claude-sonnet-4-6")
    searched = cost_of(
        replace(tokens, web_search_requests=3), provider="anthropic", model="claude-sonnet-4-6"
    )
    assert base is not None
    assert searched == pytest.approx(base + 3 * 10 / 1000)  # $10 per 1,000 searches


def test_web_searches_without_a_genai_prices_rate() -> None:
    searched = Usage(input_tokens=1000, output_tokens=100, web_search_requests=2)
    old = "claude-3-haiku-20240307"  # genai-prices has no web search rate for it
    base = cost_of(replace(searched, web_search_requests=0), provider="anthropic", model=old)
    assert base is not None
    # Anthropic's published price fills in ...
    assert cost_of(searched, provider="anthropic", model=old) == pytest.approx(base + 0.02)
    # ... elsewhere the cost is unknown rather than too low.
    # deepseek-chat is priced, but not its searches
    unsearched = replace(searched, web_search_requests=0)
    assert cost_of(unsearched, provider="deepseek", model="deepseek-chat") is not None
    assert cost_of(searched, provider="deepseek", model="deepseek-chat") is None


def test_a_pricing_override_prices_web_searches() -> None:
    price = PricingInfo(input_per_mtok=1.0, output_per_mtok=2.0)
    u = Usage(input_tokens=1_000_000, output_tokens=1_000_000, web_search_requests=5)
    assert cost_of(u, provider="x", model="y", override=price) == pytest.approx(3.0 + 0.05)
    cheaper = PricingInfo(input_per_mtok=1.0, output_per_mtok=2.0, web_search_per_thousand=5.0)
    assert cost_of(u, provider="x", model="y", override=cheaper) == pytest.approx(3.0 + 0.025)


def test_from_dict_rejects_unknown_fields() -> None:
    with pytest.raises(MessageValidationError):
        Usage.from_dict({"input_tokens": 1, "bogus": 2})


def test_from_dict_rejects_wrong_types() -> None:
    bad: dict[str, Any] = {"input_tokens": "many"}
    with pytest.raises(MessageValidationError):
        Usage.from_dict(bad)


small = st.integers(min_value=0, max_value=10_000)
opt_small = st.none() | small
usages = st.builds(
    Usage,
    input_tokens=small,
    output_tokens=small,
    cache_creation_input_tokens=small,
    cache_read_input_tokens=small,
    cache_creation_5m_input_tokens=opt_small,
    cache_creation_1h_input_tokens=opt_small,
    reasoning_tokens=opt_small,
    web_search_requests=opt_small,
    web_fetch_requests=opt_small,
    service_tier=st.none() | st.sampled_from(["standard", "priority", "flex"]),
    # Integer-valued costs keep float sums exact.
    cost=st.none() | st.integers(min_value=0, max_value=1000).map(float),
    requests=st.integers(min_value=0, max_value=5),
    known=st.booleans(),
)


@given(usages, usages)
def test_add_is_commutative(a: Usage, b: Usage) -> None:
    assert a + b == b + a


@given(usages, usages, usages)
def test_add_is_associative(a: Usage, b: Usage, c: Usage) -> None:
    assert (a + b) + c == a + (b + c)


@given(usages, usages)
def test_total_input_is_additive(a: Usage, b: Usage) -> None:
    assert (a + b).total_input_tokens == a.total_input_tokens + b.total_input_tokens
    assert (a + b).total_tokens == a.total_tokens + b.total_tokens


@given(usages)
def test_round_trip_property(u: Usage) -> None:
    assert Usage.from_dict(json.loads(json.dumps(u.to_dict()))) == u


# --- str(): one line ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("usage", "line"),
    [
        (
            Usage(
                input_tokens=200,
                cache_read_input_tokens=1000,
                output_tokens=350,
                reasoning_tokens=120,
                requests=2,
                cost=0.0123,
            ),
            "input 1,200 (uncached 200, cache write 0, cache read 1,000) · output 350"
            " (reasoning 120) · 2 requests · $0.0123",
        ),
        (
            Usage(input_tokens=10, cache_creation_input_tokens=5, output_tokens=3, requests=1),
            "input 15 (uncached 10, cache write 5, cache read 0) · output 3 · 1 request"
            " · cost unknown",
        ),
        (
            Usage(input_tokens=10, output_tokens=3, requests=1, cost=0.0),
            "input 10 (uncached 10, cache write 0, cache read 0) · output 3 · 1 request · $0.00",
        ),
        (
            Usage(),
            "input 0 (uncached 0, cache write 0, cache read 0) · output 0 · 0 requests · $0.00",
        ),
        (
            Usage.ZERO,
            "input 0 (uncached 0, cache write 0, cache read 0) · output 0 · 0 requests · $0.00",
        ),
        (
            Usage(web_search_requests=2, requests=1),
            "input 0 (uncached 0, cache write 0, cache read 0) · output 0 · 1 request"
            " · cost unknown",
        ),
        (
            Usage(input_tokens=2_000_000, output_tokens=40_000, requests=12, cost=12.3456),
            "input 2,000,000 (uncached 2,000,000, cache write 0, cache read 0) · output 40,000"
            " · 12 requests · $12.35",
        ),
        (
            Usage(input_tokens=3, output_tokens=1, requests=1, cost=0.00002),
            "input 3 (uncached 3, cache write 0, cache read 0) · output 1 · 1 request · <$0.0001",
        ),
        (
            Usage(input_tokens=0, output_tokens=0, reasoning_tokens=0, requests=1, cost=0.0),
            "input 0 (uncached 0, cache write 0, cache read 0) · output 0 (reasoning 0)"
            " · 1 request · $0.00",
        ),
    ],
)
def test_str_is_one_line(usage: Usage, line: str) -> None:
    assert str(usage) == line
    assert "\n" not in str(usage)


def test_str_marks_lower_bounds() -> None:
    partial = Usage(
        input_tokens=1200,
        output_tokens=40,
        reasoning_tokens=8,
        requests=2,
        cost=0.5,
        known=False,
    )
    assert str(partial) == (
        "input ≥1,200 (uncached ≥1,200, cache write ≥0, cache read ≥0) · output ≥40"
        " (reasoning ≥8) · ≥2 requests · ≥$0.5000"
    )
    # a call whose usage never arrived: nothing counted, so the price is not known to be zero
    assert str(Usage(known=False)) == (
        "input ≥0 (uncached ≥0, cache write ≥0, cache read ≥0) · output ≥0 · ≥0 requests"
        " · cost unknown"
    )
    assert str(Usage(input_tokens=5, requests=1) + Usage(known=False)).endswith(
        "≥1 request · cost unknown"
    )


@given(usages)
def test_str_never_hides_an_unknown_price(u: Usage) -> None:
    line = str(u)
    assert "\n" not in line
    assert ("cost unknown" in line) == (
        u.cost is None
        and (
            u.total_tokens > 0
            or not u.known
            or bool(u.web_search_requests)
            or bool(u.web_fetch_requests)
        )
    )
    assert ("≥" in line) == (not u.known)
