"""Anthropic (Claude) on the official SDK: ``pip install 'dive-agents[anthropic]'``.

``AnthropicModel`` calls the Messages API; ``AnthropicVertexModel`` and
``AnthropicBedrockModel`` call Claude on Vertex AI and Amazon Bedrock through the SDK's
platform clients (extras ``vertex`` and ``bedrock``).
"""

import importlib.util

if importlib.util.find_spec("anthropic") is None:  # pragma: no cover - depends on the install
    from dive.errors import MissingExtraError

    raise MissingExtraError(
        "the Anthropic provider needs the anthropic SDK: pip install 'dive-agents[anthropic]'"
    )

from dive.providers.anthropic._bedrock import AnthropicBedrockModel
from dive.providers.anthropic._cache import place_markers
from dive.providers.anthropic._capabilities import Capabilities, capabilities_for
from dive.providers.anthropic._computer import ComputerUse
from dive.providers.anthropic._model import AnthropicModel
from dive.providers.anthropic._request import build_request
from dive.providers.anthropic._vertex import AnthropicVertexModel

__all__ = [
    "AnthropicBedrockModel",
    "AnthropicModel",
    "AnthropicVertexModel",
    "Capabilities",
    "ComputerUse",
    "build_request",
    "capabilities_for",
    "place_markers",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
