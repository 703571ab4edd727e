"""Between the executor's loop turns: the next turn's call, its texts, and checks.

``send`` / ``send_first`` / ``continue_turn`` build the next loop turn; ``settled`` checks
whether a handler committed or aborted; ``outcome_of`` names an exit for the metrics.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from dive.agent import Agent, RunResult
from dive.executor._errors import (
    ExecutorError,
    ExecutorIncomplete,
    ExecutorRefused,
    MaxRoundsExceeded,
)
from dive.executor._outcomes import Outcomes
from dive.executor._suspend import ExecutionSuspended
from dive.executor._trace import ExecutionTrace
from dive.messages import Message
from dive.prompts import Prompt

__all__ = [
    "OUTPUT_LIMIT_TEXT",
    "REDIRECT_TEXT",
    "REPAIR_TEXT",
    "Call",
    "build",
    "continue_turn",
    "outcome_of",
    "send",
    "send_first",
    "settled",
]

OUTPUT_LIMIT_TEXT = (
    "Your previous response was cut off at the output limit (max_tokens={n}) and nothing in it "
    "was executed. Continue, keeping your next response shorter."
)
REDIRECT_TEXT = (
    "You must call the {name} tool to return your response. Do not respond with plain text. "
    "If you encountered an error or cannot complete the task, call {name} with an "
    "appropriate error or summary."
)
REPAIR_TEXT = (
    "Your response could not be used: {reason}. Reply with only the corrected JSON object in a "
    "json fenced code block."
)


Call = Callable[[Agent[str, None]], Awaitable[RunResult[str]]]


def send(message: Message, history: list[Message]) -> Call:
    """The next loop turn: ``message`` after ``history``."""
    return lambda agent: agent.run(message, history=history)


def settled(outcomes: Outcomes, trace: ExecutionTrace, history: list[Message]) -> bool:
    """True when a handler committed; raise when one aborted.

    The first terminal outcome in the model's order of calls (``history``) is the one.
    """
    outcomes.settle([c.id for m in history if m.role == "assistant" for c in m.tool_calls])
    abort = outcomes.abort
    if isinstance(abort, ExecutorError):  # a validator raised: ResultValidationError
        abort.trace = abort.trace or trace
        abort.messages = abort.messages or tuple(history)
        raise abort
    if abort is not None:
        raise ExecutorError(str(abort), trace=trace, messages=history) from abort
    return outcomes.committed


def build(prompt: Prompt | None, what: str) -> str:
    """``prompt.build()`` ("" for None); a failure is an ``ExecutorError`` saying ``what``."""
    if prompt is None:
        return ""
    try:
        return prompt.build()
    except Exception as exc:
        raise ExecutorError(f"{what}: {exc}") from exc


def outcome_of(exc: BaseException) -> str:
    """The ``dive.executor.outcome`` of an execution that raised ``exc``."""
    if isinstance(exc, ExecutionSuspended):
        return "suspended"
    if isinstance(exc, MaxRoundsExceeded):
        return "round_limit"
    if isinstance(exc, ExecutorRefused):
        return "refused"
    if isinstance(exc, ExecutorIncomplete):
        return "incomplete"
    return "error"


def send_first(message: Message) -> Call:
    """The first loop turn: the rendered prompt as the input."""
    return lambda agent: agent.run(message)


def continue_turn(history: list[Message]) -> Call:
    """The next loop turn: the model on ``history`` as it stands."""
    return lambda agent: agent.run(history=history, continue_turn=True)
