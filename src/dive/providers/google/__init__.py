"""Google Gemini (Gemini API and Vertex AI) on the official SDK.

Install with ``pip install 'dive-agents[google]'``.
"""

import importlib.util

try:
    _genai = importlib.util.find_spec("google.genai")
except ModuleNotFoundError:  # no ``google`` namespace at all
    _genai = None
if _genai is None:  # pragma: no cover - depends on the install
    from dive.errors import MissingExtraError

    raise MissingExtraError(
        "the Google provider needs google-genai: pip install 'dive-agents[google]'"
    )

from dive.providers.google._capabilities import GeminiCapabilities, capabilities_for
from dive.providers.google._config import build_config
from dive.providers.google._contents import build_contents
from dive.providers.google._model import GeminiModel
from dive.providers.google._settings import GeminiSettings, SafetySetting

__all__ = [
    "GeminiCapabilities",
    "GeminiModel",
    "GeminiSettings",
    "SafetySetting",
    "build_config",
    "build_contents",
    "capabilities_for",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
