"""Model providers on the official SDKs. Only modules under this package import vendor SDKs.

Each provider lives in its own subpackage (``dive.providers.anthropic``, …) so that importing
dive never requires an SDK you did not install.
"""

from dive.providers._registry import COMPATIBLE, PROVIDERS, model, provider_of
from dive.providers._retry import RetryPolicy
from dive.providers._warnings import TEMPERATURE_DROPPED, settings_warnings

__all__ = [
    "COMPATIBLE",
    "PROVIDERS",
    "TEMPERATURE_DROPPED",
    "RetryPolicy",
    "model",
    "provider_of",
    "settings_warnings",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
