"""The typed executor: ``Executor[Request, Response]`` turns one request into one response.

For batch and pipeline agents (review bots, triage, classifiers): the request binds into a
literal prompt (``dive.prompts``), the model works with the given tools and submits its
result through a validated ``submit_result`` tool (or answers JSON in text mode), and the
executor returns the validated pydantic model. It runs on dive's agent loop: model calls,
stop reasons, retries, cache markers and tool governance are the loop's. See
``docs/executor.md``.
"""

from dive.executor._errors import (
    AbortExecution,
    ExecutorConfigError,
    ExecutorError,
    ExecutorIncomplete,
    ExecutorRefused,
    MaxRoundsExceeded,
    ProviderRetriesExhausted,
    ResponseParseError,
    ResultValidationError,
)
from dive.executor._evals import (
    Check,
    EvalCase,
    EvalReport,
    EvalResult,
    Observer,
    exact_tool_calls,
    llm_judge,
    minimum_tool_calls,
    no_errors,
    no_tool_calls,
    only_tool_calls,
    range_tool_calls,
    required_tool_calls,
    result_check,
    run_evals,
)
from dive.executor._executor import Executor
from dive.executor._options import ExecutorOptions
from dive.executor._result import ExecutionResult
from dive.executor._submit import Finding, ResultValidator, SubmissionContext, SubmitTool
from dive.executor._suspend import ConfigDriftError, ExecutionSuspended, Suspension
from dive.executor._tools import (
    Commit,
    ExecutorTool,
    ExecutorToolContext,
    HandlerOutput,
    ToolHandler,
    tool_error,
)
from dive.executor._trace import ExecutionTrace, TracedCall, TracedRound
from dive.executor._tracers import Tracer, TraceRecorder, use_tracer

__all__ = [
    "AbortExecution",
    "Check",
    "Commit",
    "ConfigDriftError",
    "EvalCase",
    "EvalReport",
    "EvalResult",
    "ExecutionResult",
    "ExecutionSuspended",
    "ExecutionTrace",
    "Executor",
    "ExecutorConfigError",
    "ExecutorError",
    "ExecutorIncomplete",
    "ExecutorOptions",
    "ExecutorRefused",
    "ExecutorTool",
    "ExecutorToolContext",
    "Finding",
    "HandlerOutput",
    "MaxRoundsExceeded",
    "Observer",
    "ProviderRetriesExhausted",
    "ResponseParseError",
    "ResultValidationError",
    "ResultValidator",
    "SubmissionContext",
    "SubmitTool",
    "Suspension",
    "ToolHandler",
    "TraceRecorder",
    "TracedCall",
    "TracedRound",
    "Tracer",
    "exact_tool_calls",
    "llm_judge",
    "minimum_tool_calls",
    "no_errors",
    "no_tool_calls",
    "only_tool_calls",
    "range_tool_calls",
    "required_tool_calls",
    "result_check",
    "run_evals",
    "tool_error",
    "use_tracer",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
