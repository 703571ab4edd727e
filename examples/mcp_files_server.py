"""A small local MCP server for ``examples/mcp_agent.py``: notes in a folder.

Built with the MCP SDK's ``MCPServer`` and run over stdio by the client that starts it::

    python examples/mcp_files_server.py            # NOTES_DIR says where (default ./notes)

``delete_note`` asks the user to confirm (an elicitation). Set ``NOTES_STATE_KEY`` (32+
characters) so that a restarted server still accepts an answer to a question it asked
before the restart; without it the key lives and dies with the process.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import (
    AcceptedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    RequestStateSecurity,
    Resolve,
)
from mcp.types import ToolAnnotations
from pydantic import BaseModel

ROOT = Path(os.environ.get("NOTES_DIR", "notes"))
KEY = os.environ.get("NOTES_STATE_KEY")

mcp = MCPServer(
    "notes",
    log_level="ERROR",
    request_state_security=RequestStateSecurity(keys=[KEY.encode()]) if KEY else None,
)


def _path(name: str) -> Path:
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"{name!r} is not a note name")
    return ROOT / f"{name}.txt"


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
def list_notes() -> list[str]:
    """The names of all notes."""
    return sorted(p.stem for p in ROOT.glob("*.txt"))


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
def read_note(name: str) -> str:
    """The text of one note."""
    return _path(name).read_text()


@mcp.tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True))
def write_note(name: str, text: str) -> str:
    """Write (or replace) a note."""
    ROOT.mkdir(parents=True, exist_ok=True)
    _path(name).write_text(text)
    return f"wrote {name}"


class Confirm(BaseModel):
    ok: bool


async def _confirm(name: str) -> Elicit[Confirm]:
    return Elicit(f"Delete the note {name!r}? It cannot be undone.", Confirm)


@mcp.tool(annotations=ToolAnnotations(destructive_hint=True))
async def delete_note(
    name: str, confirm: Annotated[ElicitationResult[Confirm], Resolve(_confirm)]
) -> str:
    """Delete a note, once the user confirms."""
    if isinstance(confirm, AcceptedElicitation) and confirm.data.ok:
        _path(name).unlink(missing_ok=True)
        return f"deleted {name}"
    return f"kept {name}"


if __name__ == "__main__":
    mcp.run()
