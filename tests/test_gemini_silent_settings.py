"""Settings Gemini used to drop silently: mapped onto the wire, or refused before any request.

- ``service_tier`` → ``serviceTier`` (``flex``, ``standard``, ``priority``); another value,
  such as Anthropic's ``auto``, is refused.
- ``metadata`` → ``labels`` (user-defined request metadata).
- ``caching``: Gemini caches prompt prefixes implicitly, with nothing to send; ``caching=True``
  is honoured as is, ``caching=False`` cannot be (there is no switch) and is refused.
  ``cache_ttl`` is not sent: implicit caching has no TTL (an explicit cache is created with
  the SDK and named with ``GeminiSettings(extra_config={"cached_content": ...})``).

With ``ModelSettings(strict=False)`` a refused setting is dropped with one warning instead.
Each case goes through the official SDK to the Gemini simulator, which checks the values.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from dive.agent import Agent
from dive.errors import UnsupportedSettingError
from dive.llm import ModelRequest, ModelSettings
from dive.messages import Message
from dive.providers.google import GeminiSettings
from dive.testing.gemini import GeminiSimulator
from tests.test_gemini_golden import STREAMING, bodies, gemini, running, send

HI = (Message.user("hi"),)


@pytest.fixture
async def sim() -> AsyncIterator[GeminiSimulator]:
    async with running() as s:
        yield s


def _request(**settings: object) -> ModelRequest:
    return ModelRequest(messages=HI, settings=ModelSettings(**settings))  # type: ignore[arg-type]


@STREAMING
@pytest.mark.parametrize("tier", ["flex", "standard", "priority"])
async def test_service_tier_goes_on_the_wire(
    sim: GeminiSimulator, streaming: bool, tier: str
) -> None:
    sim.add(sim.text("ok"))
    await send(gemini(sim), _request(service_tier=tier), streaming)
    (body,) = bodies(sim)
    assert str(body["serviceTier"]).lower() == tier


@STREAMING
async def test_metadata_goes_on_the_wire_as_labels(sim: GeminiSimulator, streaming: bool) -> None:
    sim.add(sim.text("ok"))
    request = _request(metadata={"team": "search", "user_id": "u-42"})
    await send(gemini(sim), request, streaming)
    (body,) = bodies(sim)
    assert body["labels"] == {"team": "search", "user_id": "u-42"}


async def test_a_service_tier_gemini_lacks_is_refused_before_any_request(
    sim: GeminiSimulator,
) -> None:
    model = gemini(sim)
    with pytest.raises(UnsupportedSettingError, match=r"service_tier 'auto'.*flex, standard"):
        await send(model, _request(service_tier="auto"), streaming=False)
    with pytest.raises(UnsupportedSettingError, match="service_tier"):
        Agent(model=model, model_settings=ModelSettings(service_tier="standard_only"))
    assert bodies(sim) == []


async def test_caching_off_is_refused_and_caching_on_sends_nothing(sim: GeminiSimulator) -> None:
    model = gemini(sim)
    with pytest.raises(UnsupportedSettingError, match=r"caching=False.*implicit"):
        await send(model, _request(caching=False), streaming=False)
    sim.add(sim.text("ok"))
    await send(model, _request(caching=True, cache_ttl="1h"), streaming=False)
    (body,) = bodies(sim)
    assert "cachedContent" not in body
    assert "ttl" not in str(body).lower()


async def test_strict_false_drops_what_gemini_cannot_do_with_one_warning(
    sim: GeminiSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    sim.add(sim.text("ok"), sim.text("again"))
    model = gemini(sim)
    request = _request(caching=False, service_tier="auto", strict=False)
    with caplog.at_level(logging.WARNING, logger="dive.providers.google"):
        await send(model, request, streaming=False)
        await send(model, request, streaming=False)
    first, _ = bodies(sim)
    assert "serviceTier" not in first
    texts = [r.getMessage() for r in caplog.records]
    assert len([t for t in texts if "caching=False" in t]) == 1
    assert len([t for t in texts if "service_tier" in t]) == 1


async def test_an_explicit_cache_is_named_through_extra_config(sim: GeminiSimulator) -> None:
    sim.add(sim.text("ok"))
    settings = GeminiSettings(extra_config={"cached_content": "cachedContents/abc123"})
    await send(gemini(sim, settings=settings), _request(), streaming=False)
    (body,) = bodies(sim)
    assert body["cachedContent"] == "cachedContents/abc123"


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ({"serviceTier": "turbo"}, "Invalid value at 'service_tier'"),
        ({"labels": {"team": 7}}, "'labels' must map strings to strings"),
    ],
)
def test_the_simulator_checks_the_tier_and_labels_on_the_wire(
    extra: dict[str, object], error: str
) -> None:
    import json
    import urllib.error
    import urllib.request

    from dive.testing.gemini import simulator

    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], **extra}
    with simulator() as s:
        request = urllib.request.Request(
            f"{s.url}/v1beta/models/gemini-2.5-flash:generateContent",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json", "x-goog-api-key": "k"},
        )
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=10)
        assert info.value.code == 400
        assert error in info.value.read().decode()
        assert s.requests[0].body["contents"]  # recorded as sent
