"""The provider-neutral model layer.

Requests, responses, Anthropic-shaped stream events and their accumulator, stop-reason
classification and usage. This package knows nothing of ``dive.providers``.
"""

from dive.llm._accumulate import (
    ResponseAccumulator,
    fold_raw_delta,
    parse_tool_arguments,
    response_to_events,
)
from dive.llm._events import (
    CitationsDelta,
    ContentBlockDelta,
    ContentBlockStart,
    ContentBlockStop,
    Delta,
    InputJSONDelta,
    MessageDelta,
    MessageStart,
    MessageStop,
    Ping,
    SignatureDelta,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
)
from dive.llm._model import Model, SettingsChecker, TokenCounter, collect
from dive.llm._observe import RetryNotice, observe_retries, report_retry
from dive.llm._pricing import PricingInfo, cost_of
from dive.llm._request import ModelRequest, ModelSettings, ToolChoice
from dive.llm._response import ModelResponse
from dive.llm._stop import STOP_KINDS, StopKind, classify_stop_reason
from dive.llm._usage import Usage

__all__ = [
    "cost_of",
    "STOP_KINDS",
    "CitationsDelta",
    "ContentBlockDelta",
    "ContentBlockStart",
    "ContentBlockStop",
    "Delta",
    "InputJSONDelta",
    "MessageDelta",
    "MessageStart",
    "MessageStop",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "PricingInfo",
    "Ping",
    "ResponseAccumulator",
    "RetryNotice",
    "SignatureDelta",
    "StopKind",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
    "SettingsChecker",
    "TokenCounter",
    "ToolChoice",
    "Usage",
    "classify_stop_reason",
    "collect",
    "fold_raw_delta",
    "observe_retries",
    "parse_tool_arguments",
    "report_retry",
    "response_to_events",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
