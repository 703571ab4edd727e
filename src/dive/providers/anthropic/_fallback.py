"""The two 400s the API answers for a setting a model no longer takes, and the one resend.

The capability table knows today's models; an id it does not know gets conservative
capabilities, and the API may still refuse budgeted thinking (``"thinking.type.enabled" is
not supported for this model``) or any ``temperature`` (``temperature`` is deprecated for
this model). The answer is recognised by its message: the request is sent once more with the
fallback (adaptive thinking, no temperature) and the model object remembers it for its id, so
later requests are right the first time. This is not a retry: the request changes, and nothing
counts against the ``RetryPolicy``.
"""

from __future__ import annotations

from dataclasses import replace

from dive.errors import InvalidRequestError
from dive.providers.anthropic._capabilities import Capabilities

__all__ = ["TEMPERATURE_REFUSED", "THINKING_REFUSED", "learn"]

THINKING_REFUSED = '"thinking.type.enabled" is not supported for this model'
TEMPERATURE_REFUSED = "`temperature` is deprecated for this model"


def learn(caps: Capabilities, error: BaseException) -> Capabilities | None:
    """``caps`` corrected by what ``error`` says the model refuses; None for any other error."""
    if not isinstance(error, InvalidRequestError):
        return None
    text = str(error)
    if THINKING_REFUSED in text and not caps.adaptive_only:
        return replace(caps, adaptive_only=True)
    if TEMPERATURE_REFUSED in text and caps.temperature:
        return replace(caps, temperature=False)
    return None
