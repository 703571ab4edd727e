"""``AskUser``: a question for the person, answered by resuming the turn.

The tool never waits: it returns :class:`~dive.tools.Suspend`, so the turn ends
``suspended`` with one pending call whose ``prompt`` is the question, ``reason`` is
``"input_required"`` and ``metadata`` is ``{"type": "ask_user", "question": ...,
"choices": [...]}``. The application shows the question, then resumes with the answer as the
call's result: ``agent.run(tool_results={call_id: "the answer"})`` (with a session) or with
``suspension=`` for a stateless run. The model sees the answer as the tool's result.

Annotated read-only (it changes nothing); no permission metadata (it has no path, command
or URL to match), so only bare-name rules (``AskUser``) match it.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from dive.messages import JSONValue
from dive.tools import FunctionTool, Suspend, ToolAnnotations, ToolReturn

__all__ = ["ASK_USER_TYPE", "AskUser"]

ASK_USER_TYPE = "ask_user"
"""``metadata["type"]`` of an ``AskUser`` suspension (how an application recognises it)."""
MAX_CHOICES = 20

_DESCRIPTION = """\
Ask the user a question and wait for the answer; use it when you cannot go on without their
decision or information (a preference, a missing detail, a choice between approaches).

- question: one clear question, with the context the user needs to answer it.
- choices: optional short answers to pick from (2-{max} distinct options). The user may
  still answer in their own words.
- The answer comes back as this tool's result. Ask one question per call, and only when it
  matters: do not ask what you can find out with the other tools.
"""


class AskUser(FunctionTool):
    """``AskUser(question, choices=None)``: suspends the turn until the user answers.

    Annotated read-only; carries no permission metadata.
    """

    def __init__(self) -> None:
        super().__init__(
            self._ask,
            name="AskUser",
            description=_DESCRIPTION.format(max=MAX_CHOICES),
            annotations=ToolAnnotations(title="Ask the user", read_only=True),
        )

    def _ask(
        self,
        question: Annotated[
            str, Field(min_length=1, description="The question, with the context needed.")
        ],
        choices: Annotated[
            list[str] | None,
            Field(description="Optional answers to choose from (distinct, 2 or more)."),
        ] = None,
    ) -> Suspend | ToolReturn:
        if not question.strip():
            return ToolReturn(
                content="question is blank; write the question to ask.", is_error=True
            )
        options = [c.strip() for c in choices or ()]
        problem = _check_choices(options) if choices is not None else None
        if problem is not None:
            return ToolReturn(content=problem, is_error=True)
        return Suspend(
            question.strip(),
            reason="input_required",
            metadata={
                "type": ASK_USER_TYPE,
                "question": question.strip(),
                "choices": list[JSONValue](options),
            },
        )


def _check_choices(options: list[str]) -> str | None:
    if any(not c for c in options):
        return "choices holds a blank entry; give each choice some text (or leave choices out)."
    if len(options) < 2:
        return "choices needs at least two options (or leave it out for a free-form answer)."
    if len(options) > MAX_CHOICES:
        return f"choices has {len(options)} options; give at most {MAX_CHOICES}."
    if len(set(options)) != len(options):
        return "choices holds the same option twice; make each one distinct."
    return None
