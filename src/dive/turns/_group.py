"""``OpenGroup``: the tool calls of one response while they run.

Results and hook context so far, whether a halting call failed, and which calls ended the
turn. Only ``TurnState`` changes it (``settle`` writes a result with its call's state); the
loop reads it.
"""

from __future__ import annotations

from collections.abc import Mapping

from dive.messages import Message, TextBlock, ToolCall, ToolResult

__all__ = ["OpenGroup"]


class OpenGroup:
    """The tool calls of one response while they run: results and hook context so far.

    Args:
        calls: the response's tool calls, in the model's order.
    """

    __slots__ = ("_context", "_ending", "_halted", "_results", "calls")

    def __init__(
        self,
        calls: tuple[ToolCall, ...],
        *,
        results: Mapping[str, ToolResult] | None = None,
        context: Mapping[str, str] | None = None,
        halted: bool = False,
        ending: tuple[str, ...] = (),
    ) -> None:
        self.calls = calls
        self._results: dict[str, ToolResult] = dict(results or {})
        self._context: dict[str, str] = dict(context or {})
        self._halted = halted
        self._ending: list[str] = list(ending)

    @property
    def results(self) -> Mapping[str, ToolResult]:
        """Recorded results by call id."""
        return self._results

    @property
    def context(self) -> Mapping[str, str]:
        """Hook ``additional_context`` by call id."""
        return self._context

    @property
    def halted(self) -> bool:
        """True once a halting call failed: later halting calls are not run."""
        return self._halted

    @property
    def ending(self) -> tuple[str, ...]:
        """Calls whose success ends the turn once the group is done, in model order."""
        order = {c.id: i for i, c in enumerate(self.calls)}
        return tuple(sorted(self._ending, key=lambda i: order.get(i, len(order))))

    def add_result(self, call_id: str, result: ToolResult) -> None:
        """Record a call's result (``TurnState.settle``).

        Args:
            call_id: the call answered.
            result: its result.
        """
        self._results[call_id] = result

    def add_context(self, call_id: str, text: str) -> None:
        """Add hook context for a call, after a newline (``TurnState.group_context``).

        Args:
            call_id: the call the context follows.
            text: the hook's ``additional_context``.
        """
        prev = self._context.get(call_id)
        self._context[call_id] = f"{prev}\n{text}" if prev else text

    def halt(self) -> None:
        """A halting call failed (``TurnState.settle``)."""
        self._halted = True

    def end_with(self, call_id: str) -> None:
        """A call succeeded in ending the turn (``TurnState.settle``).

        Args:
            call_id: the call that ended the turn.
        """
        if call_id not in self._ending:
            self._ending.append(call_id)

    def result_messages(self) -> list[Message]:
        """Recorded results in call order (no additional context)."""
        return [
            Message(role="tool", name=c.name, content=(self._results[c.id],))
            for c in self.calls
            if c.id in self._results
        ]

    def messages(self) -> list[Message]:
        """Result messages in call order, then the joined additional context."""
        out = self.result_messages()
        ctx = [self._context[c.id] for c in self.calls if c.id in self._context]
        if ctx:
            out.append(Message(role="user", content=(TextBlock(text="\n".join(ctx)),)))
        return out
