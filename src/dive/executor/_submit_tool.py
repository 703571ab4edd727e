"""The submit tool as a loop tool: rejections, findings and the commit.

It is terminal: an accepted submission ends the loop's turn. Rejections and findings are
``is_error`` results, traced ``recoverable``, so the loop goes on and the model tries again.
A validator that raises aborts the run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from dive.executor._calls import traced_call
from dive.executor._errors import ResultValidationError
from dive.executor._outcomes import Outcomes
from dive.executor._submit import (
    Finding,
    ResultValidator,
    SubmissionContext,
    SubmitTool,
    check_submission,
    payload_schema,
    run_validators,
    submit_schema,
)
from dive.executor._trace import ExecutionTrace, TracedCall
from dive.messages import ToolCall
from dive.tools import Tool, ToolAnnotations, ToolContext, ToolOutput, ToolReturn, build_definition

__all__ = ["SubmitLoopTool"]


class SubmitLoopTool(Tool):
    """``submit_result`` for one execute."""

    def __init__(
        self,
        response_type: type[BaseModel],
        cfg: SubmitTool,
        validators: Sequence[ResultValidator[Any]],
        trace: ExecutionTrace,
        outcomes: Outcomes,
    ) -> None:
        self._type = response_type
        self._cfg = cfg
        self._validators = tuple(validators)
        self._trace = trace
        self._outcomes = outcomes
        self._payload = payload_schema(response_type, cfg.omit_payload_fields)
        self.annotations = ToolAnnotations(read_only=True)
        self.definition = build_definition(
            cfg.name,
            cfg.description,
            submit_schema(response_type, cfg),
            self.annotations,
            {"terminal": True},
        )

    def validate(self, arguments: Mapping[str, Any]) -> tuple[Any, str | None]:
        return arguments, None  # checked in order by ``call``, with the executor's texts

    async def call(self, input: Any, ctx: ToolContext[Any]) -> ToolOutput:
        call = ToolCall(id=ctx.tool_call_id, name=self.name, arguments=dict(input))
        async with traced_call(self._trace, call, self._outcomes) as record:
            response, reasoning, rejection = check_submission(input, self._type, self._cfg)
            record.reasoning = reasoning or None
            if response is None:
                record.error, record.recoverable = rejection, True
                return ToolReturn(content={"error": rejection}, is_error=True)
            try:
                findings = await self._findings(response, reasoning, ctx.tool_call_id)
            except ResultValidationError as exc:
                self._outcomes.set_abort(ctx.tool_call_id, exc, record)
                record.error = str(exc)
                return ToolReturn(content={"error": str(exc)}, is_error=True, terminal=True)
            if findings:
                text = (
                    f"Result rejected: validation raised {len(findings)} finding(s). Address "
                    f"each finding and call {self.name} again with your corrected, complete "
                    "result."
                )
                data = {"error": text, "findings": [f.to_json() for f in findings]}
                record.error, record.recoverable = json.dumps(data), True
                self._outcomes.interventions.append("submit_rejected")
                return ToolReturn(content=data, is_error=True)
            self._accept(record, response)
            return ToolReturn(content=record.result)

    async def _findings(self, response: BaseModel, reasoning: str, call_id: str) -> list[Finding]:
        sub = SubmissionContext(
            reasoning=reasoning, tool_call_id=call_id, round=self._outcomes.round, trace=self._trace
        )
        return await run_validators(
            response, sub, self._payload, self._validators, self._cfg.omit_payload_fields
        )

    def _accept(self, record: TracedCall, response: BaseModel) -> None:
        record.terminal = True
        record.result = {"success": True, "message": self._cfg.success_message}
        self._outcomes.set_commit(record.id, response, record)

    async def commit_if_accepted(self, call: ToolCall) -> bool:
        """Run a submission the loop did not run (a suspension ended its batch first).

        Accepted: traced as the committing call, and True. Rejected: False and nothing
        recorded, so the submission runs as usual when the suspended run resumes. A
        validator that raises raises ``ResultValidationError``.
        """
        response, reasoning, _ = check_submission(call.arguments, self._type, self._cfg)
        if response is None or await self._findings(response, reasoning, call.id):
            return False
        async with traced_call(self._trace, call, self._outcomes) as record:
            record.reasoning = reasoning or None
            self._accept(record, response)
        return True
