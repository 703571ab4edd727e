"""The model protocol every provider implements.

A model streams Anthropic-shaped events (``stream``) and can answer in one piece
(``generate``). The agent loop streams when ``supports_streaming`` is true and uses the same
accumulation either way. Providers raise only :class:`~dive.errors.ProviderError` subclasses;
vendor exceptions never escape.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from dive.llm._accumulate import ResponseAccumulator
from dive.llm._events import StreamEvent
from dive.llm._request import ModelRequest, ModelSettings
from dive.llm._response import ModelResponse

__all__ = ["Model", "SettingsChecker", "TokenCounter", "collect"]


@runtime_checkable
class Model(Protocol):
    """A language model dive can call."""

    @property
    def name(self) -> str:
        """The model name as requested (e.g. ``claude-sonnet-4-5``)."""
        ...

    @property
    def provider(self) -> str:
        """The provider label (``anthropic``, ``openai``, ``google``, ``scripted``…)."""
        ...

    @property
    def supports_streaming(self) -> bool:
        """Whether ``stream`` delivers events incrementally."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send the request and yield stream events until ``message_stop``.

        Args:
            request: what to send.
        """
        ...

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Send the request and return the whole response.

        Args:
            request: what to send.
        """
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """Optional: a model that can count a request's input tokens without generating.

    Not part of :class:`Model`, so every existing model stays valid; check for it with
    ``isinstance(model, TokenCounter)``. Token limits and compaction use it when present.
    """

    async def count_tokens(self, request: ModelRequest) -> int:
        """The input tokens ``request`` would use (system, tools and messages).

        Args:
            request: the request to count (nothing is generated).

        Raises:
            ProviderError: the provider refused or could not be reached.
        """
        ...


@runtime_checkable
class SettingsChecker(Protocol):
    """Optional: a model that can refuse settings before any request is made.

    The agent calls ``check_settings`` at construction (its default settings) and in
    ``run()`` (the merged settings), so a configuration the provider would reject raises a
    ``UserError`` before the turn begins instead of ending it incomplete.
    """

    def check_settings(self, settings: ModelSettings) -> None:
        """Raise ``UnsupportedSettingError`` naming the settings that cannot go together.

        Args:
            settings: the merged settings of a call.
        """
        ...


async def collect(model: Model, request: ModelRequest) -> ModelResponse:
    """Stream ``request`` and accumulate the response.

    Args:
        model: the model to call.
        request: what to send.
    """
    acc = ResponseAccumulator(model.name)
    async for event in model.stream(request):
        acc.add(event)
    return acc.response()
