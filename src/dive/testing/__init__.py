"""Test doubles users need: a scripted model, wire simulators and a store conformance suite.

- :class:`ScriptedModel` answers each request with the next item of its script: a response
  (built with :func:`text` and :func:`tool_use`), a string, a :class:`Step` (a response with
  faults: raise before the stream, cut it after N events, delays, a forced stop reason), or a
  callable (sync or async) that receives the :class:`~dive.llm.ModelRequest` and returns any
  of those. It records every request in ``requests``.
- ``dive.testing.anthropic``, ``dive.testing.openai`` and ``dive.testing.gemini`` are local
  HTTP simulators of the Anthropic Messages, OpenAI Chat Completions / Responses and Gemini
  APIs: the official SDKs talk to them on 127.0.0.1, so a test drives the wire path users run.
- ``dive.testing.session_conformance`` is the suite every session store dive ships passes
  (``CHECKS``); run it on your own store.
"""

from dive.testing._scripted import (
    ScriptedModel,
    ScriptExhaustedError,
    ScriptItem,
    Step,
    call,
    text,
    tool_use,
)

__all__ = [
    "ScriptExhaustedError",
    "ScriptItem",
    "ScriptedModel",
    "Step",
    "call",
    "text",
    "tool_use",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
