"""Whether an answer is the turn's output: accepted, asked again, or the end of the turn.

Each check returns a :data:`Verdict`: an ``Ending`` (the output was accepted and ends the
turn, or the retries ran out), :data:`RETRY` (the model was told what was wrong and is asked
again), or None (nothing to decide: accepted without ending, or no output expected). A failed
attempt counts against ``output_retries``; past it the turn ends incomplete (``error``) with
an ``OutputValidationError``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dive.agent._result import answer_text
from dive.agent._run import Run
from dive.errors import OutputValidationError
from dive.messages import ToolCall, ToolResult
from dive.turns import Reminder, reminder_message
from dive.turns._engine import Completed, Ending, Incomplete

__all__ = ["COMPLETED", "RETRY", "Retry", "Verdict", "accept", "check_submissions", "text_output"]

COMPLETED: Final = Completed()
_VALIDATOR_RETRY = "an output validator asked for a retry"


@dataclass(frozen=True, slots=True)
class Retry:
    """An output attempt was rejected and the model was told why: ask it again."""


RETRY: Final = Retry()

Verdict = Ending | Retry | None
"""What an output check concludes (see the module docstring)."""


def _failed_attempt(run: Run, message: str, what: str, *, told: bool = False) -> Verdict:
    """An attempt failed: tell the model and ask again, or give up after ``output_retries``.

    ``told``: the model already saw ``message`` (in a tool result), so no reminder is added.
    """
    failures = run.output.count_failure()
    if failures > run.config.output_retries:
        err = OutputValidationError(
            f"the output was not accepted after {failures} attempt(s): {what}",
            errors=(message,),
        )
        return Incomplete(reason="error", error=err)
    if not told:
        reminder = Reminder(name="output-retry", content=message)
        run.state.transcript.add(reminder_message(reminder, at=run.runner.now()))
    return RETRY


async def accept(run: Run, value: Any) -> Verdict:
    """Run the output validators on a schema-valid value: None once accepted, else a retry."""
    value, retry = await run.config.output.check(run.run_context(), value)
    if retry is not None:
        return _failed_attempt(run, retry, _VALIDATOR_RETRY)
    run.output.accept(value)
    return None


async def text_output(run: Run) -> Verdict:
    """A final text answer: the output itself, or JSON of it (native and prompted modes)."""
    spec = run.config.output
    if spec.tools and not run.output.accepted:
        names = " or ".join(t.name for t in spec.tools)
        return _failed_attempt(
            run,
            f"Respond by calling the {names} tool with your final answer; a plain text "
            "answer is not accepted.",
            f"the model answered without calling {names}",
        )
    if spec.tools:
        return None
    value, problem = spec.parse_text(answer_text(run.state.transcript.record))
    if problem is not None:
        return _failed_attempt(run, problem, problem)
    return await accept(run, value)


async def check_submissions(
    run: Run, calls: Sequence[ToolCall], results: Mapping[str, ToolResult]
) -> Verdict:
    """The first valid submit call (validators included) ends the turn; failures count."""
    spec = run.config.output
    rejected = False
    for c in calls:
        tool = spec.tool_named(c.name)
        res = results.get(c.id)
        if tool is None or res is None or run.output.accepted:
            continue
        if not res.is_error:
            value, err = tool.validate(c.arguments)
            if err is None:
                verdict = await accept(run, value)
                if verdict is None:
                    return COMPLETED
                if not isinstance(verdict, Retry):
                    return verdict
                rejected = True
                continue
        verdict = _failed_attempt(
            run, res.text, f"structured output did not validate: {res.text}", told=True
        )
        if not isinstance(verdict, Retry):
            return verdict
        rejected = True
    return RETRY if rejected and not run.output.accepted else None
