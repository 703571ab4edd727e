"""Durable execution on Temporal, by reference (extra ``temporal``).

``TemporalAgent(agent, name=..., store=...)`` runs an unchanged ``Agent``'s turns as Temporal
workflows: each step of the loop and each tool call is an activity that reads the history
from dive's session store and writes the step back, so Temporal records references and step
outcomes, never the conversation. Install with the ``temporal`` extra
(``pip install 'dive-agents[temporal]'``). See docs/temporal.md.
"""

try:
    import temporalio as _temporalio
except ImportError as exc:  # pragma: no cover - depends on the install
    from dive.errors import MissingExtraError

    raise MissingExtraError(
        f"dive.temporal needs the temporal extra ({exc}): pip install 'dive-agents[temporal]'"
    ) from exc

from dive.temporal._agent import TemporalAgent
from dive.temporal._converter import DATA_CONVERTER, connect
from dive.temporal._handle import TemporalTurnHandle
from dive.temporal._wire import LiveTurn, TextChunk

del _temporalio

__all__ = [
    "DATA_CONVERTER",
    "LiveTurn",
    "TemporalAgent",
    "TemporalTurnHandle",
    "TextChunk",
    "connect",
]

from dive._public import publish as _publish  # noqa: E402

_publish(__name__, globals(), __all__)
