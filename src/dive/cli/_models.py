"""Building the model a :class:`ModelChoice` names: a provider's, or the offline simulator.

Offline, an :class:`~dive.testing.anthropic.AnthropicSimulator` with the
:func:`~dive.testing.anthropic.demo_brain` fallback serves on 127.0.0.1 for as long as the
command runs, and an ordinary :class:`~dive.providers.anthropic.AnthropicModel` talks to it
through the official SDK (so streaming, usage and cost are the real code paths).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack
from typing import Any

from dive.cli._providers import ModelChoice
from dive.llm import Model
from dive.providers import RetryPolicy
from dive.providers import model as resolve

__all__ = ["build_model"]

OFFLINE_KEY = "offline-simulator"


def _simulator() -> AbstractContextManager[Any]:
    from dive.testing.anthropic import AnthropicSimulator, SimClock, demo_brain

    return AnthropicSimulator(clock=SimClock(realtime=True), fallback=demo_brain)


def build_model(choice: ModelChoice, *, max_retries: int, stack: ExitStack) -> Model:
    """The model of ``choice``; an offline simulator is stopped when ``stack`` closes.

    Args:
        choice: what :func:`~dive.cli._providers.choose_model` picked.
        max_retries: retries of a failed request (dive's retry policy, fewer than the
            library default so an unreachable server is reported quickly).
        stack: owns the simulator's lifetime.

    Raises:
        MissingExtraError: the provider's SDK is not installed.
        UserError: the model or its options are invalid.
    """
    retry = RetryPolicy(max_retries=max_retries)
    if choice.offline:
        from dive.errors import MissingExtraError

        try:
            from dive.providers.anthropic import AnthropicModel
        except ImportError:
            raise MissingExtraError(
                "the offline simulator talks through the Anthropic SDK: "
                "pip install 'dive-agents[anthropic]'"
            ) from None
        sim = stack.enter_context(_simulator())
        return AnthropicModel(choice.name, base_url=sim.url, api_key=OFFLINE_KEY, retry=retry)
    options: dict[str, Any] = {"retry": retry}
    if choice.base_url:
        options["base_url"] = choice.base_url
    return resolve(choice.spec, **options)
