"""OpenAI on the official SDK (``pip install 'dive-agents[openai]'``).

Responses and Chat Completions, and OpenAI-compatible servers through Chat Completions.
"""

import importlib.util

if importlib.util.find_spec("openai") is None:  # pragma: no cover - depends on the install
    from dive.errors import MissingExtraError

    raise MissingExtraError(
        "the OpenAI provider needs the openai SDK: pip install 'dive-agents[openai]'"
    )

from dive.providers.openai._chat import chat_request
from dive.providers.openai._model import OpenAIChatModel, OpenAIResponsesModel
from dive.providers.openai._responses import responses_request

__all__ = ["OpenAIChatModel", "OpenAIResponsesModel", "chat_request", "responses_request"]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
