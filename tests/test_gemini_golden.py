"""Golden request bodies for the Gemini provider tests, and the shared helpers of those tests.

A golden file ``tests/fixtures/gemini/<feature>.json`` maps a case name to the exact JSON body
``GeminiSimulator`` received for it (the official ``google-genai`` SDK's spelling: camelCase at
the top and on part kinds, snake_case inside some nested objects such as ``thinkingConfig`` or
``inlineData``, as the SDK sends them). The fixtures were written by hand from the Gemini API
reference and checked against the SDK; after an intended change of the wire shape run the tests
with ``DIVE_UPDATE_GOLDEN=1`` to rewrite the cases they touch, then review the diff.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest

from dive.llm import ModelRequest, ModelResponse, collect
from dive.providers import RetryPolicy
from dive.providers.google import GeminiModel
from dive.testing.gemini import GeminiSimulator, simulator

Json = dict[str, Any]

FIXTURES = Path(__file__).parent / "fixtures" / "gemini"
FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
STREAMING = pytest.mark.parametrize("streaming", [True, False], ids=["stream", "json"])
UPDATE = bool(os.environ.get("DIVE_UPDATE_GOLDEN"))

_OPEN: list[GeminiModel] = []


def golden(feature: str, case: str, body: Json) -> None:
    """Assert that ``body`` is the golden body ``case`` of ``feature`` (or record it)."""
    path = FIXTURES / f"{feature}.json"
    recorded: Json = json.loads(path.read_text()) if path.exists() else {}
    if UPDATE:
        recorded[case] = body
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(recorded, indent=2, sort_keys=True) + "\n")
        return
    assert case in recorded, (
        f"{path.name} has no golden body {case!r}: write it, or run with DIVE_UPDATE_GOLDEN=1 "
        "and review the diff"
    )
    assert body == recorded[case]


@asynccontextmanager
async def running() -> AsyncGenerator[GeminiSimulator]:
    """A simulator whose script must be used up; the models made against it are closed after."""
    with simulator(assert_consumed=True) as s:
        try:
            yield s
        finally:
            while _OPEN:
                await _OPEN.pop().aclose()


def gemini(sim: GeminiSimulator, model: str = "gemini-2.5-flash", **options: Any) -> GeminiModel:
    """A ``GeminiModel`` on the simulator (closed by the ``sim`` fixture)."""
    made = GeminiModel(model, base_url=sim.url, api_key="test", retry=FAST, **options)
    _OPEN.append(made)
    return made


async def send(model: GeminiModel, request: ModelRequest, streaming: bool) -> ModelResponse:
    """One call, streamed (and accumulated) or not."""
    if streaming:
        return await collect(model, request)
    return await model.generate(request)


def bodies(sim: GeminiSimulator) -> list[Json]:
    """The bodies of the ``generateContent`` requests the simulator received."""
    return [r.body for r in sim.generate_requests]


def test_golden_files_are_valid_and_normalized() -> None:
    """Every fixture is a JSON object of cases, written as the update mode writes it."""
    files = sorted(FIXTURES.glob("*.json"))
    assert files, f"no golden files in {FIXTURES}"
    for path in files:
        text = path.read_text()
        cases: Json = json.loads(text)
        assert isinstance(cases, dict), path.name
        assert cases, path.name
        assert text == json.dumps(cases, indent=2, sort_keys=True) + "\n", (
            f"{path.name} is not normalized (sorted keys, two-space indent)"
        )
        for name, body in cases.items():
            assert isinstance(body, dict), (path.name, name)
            assert cast("Json", body).get("contents"), (path.name, name)
