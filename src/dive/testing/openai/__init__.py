"""A local simulator of the OpenAI Chat Completions and Responses APIs.

It is for tests that drive the official ``openai`` SDK.

``OpenAISimulator`` is a real HTTP server on 127.0.0.1 (``POST /v1/chat/completions`` and
``POST /v1/responses``, JSON and SSE) that answers from a script and behaves like the API where
it matters to a client: data-only Chat chunks ending ``[DONE]`` and
``event:``-framed Responses events with ``sequence_number``, tool-call deltas keyed by index,
reasoning items with encrypted content it remembers, the exact 400 messages of its validation
rules, error envelopes with retry headers, ``x-request-id`` on every response, and automatic
prompt caching reported as ``cached_tokens``::

    from dive.testing.openai import OpenAISimulator, SimFault, call

    with OpenAISimulator() as sim:
        sim.add(
            sim.tool_calls(call("get_weather", {"city": "Paris"})),
            SimFault(status=429, retry_after=2),
            "It is sunny.",
        )
        client = openai.OpenAI(base_url=sim.url, api_key="test", max_retries=0)
        ...
        assert sim.requests[0]["model"] == "gpt-4.1"

One script serves both endpoints, in order. Script items: :class:`SimReply` (or the builders
``text``, ``tool_call``, ``tool_calls``, ``refusal``, ``reply`` with :func:`call` and
:func:`reasoning`), a string, the faults :class:`SimFault`, :class:`SimStreamError`,
:class:`SimCut`, :class:`SimMalformed` and :class:`SimTruncated`, or a callable receiving the
request body and returning any of these. ``python -m dive.testing.openai [--port N]`` serves
one with an echo fallback.
"""

from dive.testing.openai._cache import SimClock
from dive.testing.openai._chat import is_reasoning_model
from dive.testing.openai._script import (
    Reasoning,
    Reply,
    ScriptItem,
    SimCut,
    SimFault,
    SimMalformed,
    SimReply,
    SimStreamError,
    SimTruncated,
    ToolCall,
    call,
    reasoning,
    refusal,
    reply,
    text,
    tool_call,
    tool_calls,
)
from dive.testing.openai._simulator import OpenAISimulator, SimRequest, simulator
from dive.testing.openai._tokens import prompt_tokens, text_tokens

__all__ = [
    "OpenAISimulator",
    "Reasoning",
    "Reply",
    "ScriptItem",
    "SimClock",
    "SimCut",
    "SimFault",
    "SimMalformed",
    "SimReply",
    "SimRequest",
    "SimStreamError",
    "SimTruncated",
    "ToolCall",
    "call",
    "is_reasoning_model",
    "prompt_tokens",
    "reasoning",
    "refusal",
    "reply",
    "simulator",
    "text",
    "text_tokens",
    "tool_call",
    "tool_calls",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
