"""A local simulator of the Gemini API's ``generateContent``, for tests that drive ``google-genai``.

``GeminiSimulator`` is a real HTTP server on 127.0.0.1 serving
``POST /{v1beta|v1|v1alpha}/models/{model}:generateContent`` (JSON) and
``:streamGenerateContent?alt=sse`` (data-only SSE) from a script, and behaving like the API
where it matters to a client: camelCase response shapes, the last stream
chunk carrying ``finishReason`` and ``usageMetadata``, thought signatures it issues and checks
on replay, the 400 messages of its validation rules in Google's error envelope, faults (429 /
5xx with ``retry-after``, mid-stream errors, cut streams, malformed chunks) and deterministic
token counts::

    from google import genai
    from google.genai import types
    from dive.testing.gemini import GeminiSimulator, SimFault

    with GeminiSimulator() as sim:
        sim.add(
            sim.function_call("get_weather", {"city": "Paris"}),
            SimFault(status=429, retry_after=2),
            "It is sunny.",
        )
        client = genai.Client(api_key="test", http_options=types.HttpOptions(base_url=sim.url))
        ...
        assert sim.requests[0]["contents"][0]["role"] == "user"

``google-genai`` 3.x calls ``/v1/...`` unless ``HttpOptions(api_version="v1beta")`` (or the
``GOOGLE_GENAI_API_VERSION`` variable) says otherwise; the simulator serves every version alike.

One script serves both endpoints, in order. Script items: :class:`SimReply` (or the builders
``text``, ``function_call``, ``function_calls``, ``reply`` with :func:`text_part`,
:func:`thought_part` and :func:`function_call_part`), a string, :class:`SimBlocked` (or
``blocked``), the faults :class:`SimFault`, :class:`SimStreamError`, :class:`SimCut` and
:class:`SimMalformed`, or a callable receiving the request body and returning any of these.
``python -m dive.testing.gemini [--port N]`` serves one with an echo fallback.
"""

from dive.testing.gemini._render import BYPASS_SIGNATURES, signature_bytes
from dive.testing.gemini._script import (
    FINISH_REASONS,
    Reply,
    ScriptItem,
    SimBlocked,
    SimCut,
    SimFault,
    SimMalformed,
    SimReply,
    SimStreamError,
    blocked,
    function_call,
    function_call_part,
    function_calls,
    reply,
    text,
    text_part,
    thought_part,
)
from dive.testing.gemini._simulator import GeminiSimulator, SimRequest, simulator
from dive.testing.gemini._tokens import part_tokens, prompt_tokens

__all__ = [
    "BYPASS_SIGNATURES",
    "FINISH_REASONS",
    "GeminiSimulator",
    "Reply",
    "ScriptItem",
    "SimBlocked",
    "SimCut",
    "SimFault",
    "SimMalformed",
    "SimReply",
    "SimRequest",
    "SimStreamError",
    "blocked",
    "function_call",
    "function_call_part",
    "function_calls",
    "part_tokens",
    "prompt_tokens",
    "reply",
    "signature_bytes",
    "simulator",
    "text",
    "text_part",
    "thought_part",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
