"""Durable execution on Temporal, by reference (extra ``temporal``).

``TemporalAgent(agent, name=..., store=...)`` runs an unchanged ``Agent``'s turns as Temporal
workflows: each step of the loop and each tool call is an activity that reads the history
from dive's session store and writes the step back, so Temporal records references and step
outcomes, never the conversation. See docs/temporal.md.
"""

from dive.temporal._agent import TemporalAgent
from dive.temporal._converter import DATA_CONVERTER, connect
from dive.temporal._handle import TemporalTurnHandle
from dive.temporal._wire import LiveTurn, TextChunk

__all__ = [
    "DATA_CONVERTER",
    "LiveTurn",
    "TemporalAgent",
    "TemporalTurnHandle",
    "TextChunk",
    "connect",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
