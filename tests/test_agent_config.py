"""The loop reads a frozen ``AgentConfig`` taken when the invocation starts, never the live
agent: changing the agent during a run (from a tool, say) changes the next run only."""

from __future__ import annotations

from dive.agent import Agent, RunContext
from dive.agent._agent import REMINDER_RULE
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import ToolContext, tool


def test_changing_the_agent_mid_run_does_not_change_the_running_turns_prompt() -> None:
    @tool
    def reconfigure(ctx: ToolContext) -> str:
        """Change the agent while its turn runs."""
        ctx.agent.prime_reminders = False
        return "done"

    def dynamic(ctx: RunContext) -> str:
        return f"Call {ctx.iteration}."

    model = ScriptedModel([tool_use(call("reconfigure", {})), text("ok"), text("next")])
    agent = Agent(model=model, tools=[reconfigure], instructions=dynamic)
    agent.run_sync("go")
    first, second = model.requests[0].system, model.requests[1].system
    assert REMINDER_RULE in first
    assert REMINDER_RULE in second, "the running turn kept the configuration it started with"
    assert second.startswith("Call 1.")
    agent.run_sync("again")
    assert REMINDER_RULE not in model.requests[2].system  # the next run sees the change
