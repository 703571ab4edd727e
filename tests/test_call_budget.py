"""The loop's per-call cost, guarded without a clock: function calls per model call.

``benchmarks/calls.py`` counts the calls the loop makes per model call on the W1 workload
(under ``cProfile``, the scripted model's own calls subtracted). The count is deterministic,
so a regression fails here on any machine; ``make bench`` prints it beside its goal.
"""

from __future__ import annotations

import pytest
from benchmarks.calls import BUDGET, calls_per_model_call


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "non-streaming"])
def test_python_calls_per_model_call_stay_within_budget(streaming: bool) -> None:
    calls = calls_per_model_call(runs=3, streaming=streaming)
    assert calls.python <= BUDGET, f"{calls.python:.0f} Python calls per model call"


def test_the_count_is_deterministic() -> None:
    assert calls_per_model_call(runs=2) == calls_per_model_call(runs=3)
