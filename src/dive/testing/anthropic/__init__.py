"""A local simulator of the Anthropic Messages API, for tests that drive the official SDK.

``AnthropicSimulator`` is a real HTTP server on 127.0.0.1 (``POST /v1/messages`` JSON and SSE,
``POST /v1/messages/count_tokens``, and the same on Vertex AI's and Bedrock's URL shapes,
Bedrock's stream in AWS event-stream frames) that answers from a script and behaves like the API
where it matters to a client: the exact SSE framing and event order,
request ids, the 400 messages of its validation rules, error bodies and retry headers, and
prompt-cache accounting with breakpoints, lookback, per-model minimums and TTLs on an injectable
clock::

    from dive.testing.anthropic import AnthropicSimulator, SimFault

    with AnthropicSimulator() as sim:
        sim.add(
            sim.tool_use("get_weather", {"city": "Paris"}),
            SimFault(status=429, retry_after=2),
            "It is sunny.",
        )
        client = anthropic.Anthropic(base_url=sim.url, api_key="test", max_retries=0)
        ...
        assert sim.requests[0]["model"] == "claude-sonnet-4-5"

Script items: :class:`SimReply` (or the builders ``text``, ``tool_use``, ``reply``), a string,
the faults :class:`SimFault`, :class:`SimStreamError`, :class:`SimCut` and
:class:`SimMalformed`, or a callable receiving the request body and returning any of these.
``demo_brain`` is a fallback that answers any request plausibly offline (a few text patterns
that call the offered tools and summarise their results; not a language model): the ``dive``
command line and ``make demo`` use it when no provider is configured.
``python -m dive.testing.anthropic [--port N] [--demo]`` serves one with an echo (or the demo)
fallback.
"""

from dive.testing.anthropic._brain import demo_brain
from dive.testing.anthropic._cache import SimClock
from dive.testing.anthropic._script import (
    Reply,
    ScriptItem,
    SimCut,
    SimFault,
    SimMalformed,
    SimReply,
    SimStreamError,
    redacted_thinking_block,
    reply,
    server_tool_use_block,
    text,
    text_block,
    thinking_block,
    tool_use,
    tool_use_block,
)
from dive.testing.anthropic._simulator import AnthropicSimulator, SimRequest, simulator
from dive.testing.anthropic._tokens import block_tokens

__all__ = [
    "AnthropicSimulator",
    "Reply",
    "ScriptItem",
    "SimClock",
    "SimCut",
    "SimFault",
    "SimMalformed",
    "SimReply",
    "SimRequest",
    "SimStreamError",
    "block_tokens",
    "demo_brain",
    "redacted_thinking_block",
    "reply",
    "server_tool_use_block",
    "simulator",
    "text",
    "text_block",
    "thinking_block",
    "tool_use",
    "tool_use_block",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
