"""The agent card: who the agent is and what it can do, built from the ``Agent``.

Name and description come from the agent (``Agent(name=..., description=...)``); each tool
the model can call becomes a skill (its name and description), unless ``skills`` are given.
The card names one interface, JSON-RPC at ``url``; served with ``url=None``, the URL is that
of the request that fetched the card (so the card is right behind any mount or proxy that
sets the host and root path).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol

__all__ = ["agent_card", "with_url"]


def _skills(agent: Any) -> list[AgentSkill]:
    skills: list[AgentSkill] = []
    for definition in agent.tool_definitions:
        if definition.name == "submit_result":
            continue  # the structured-output tool is the answer, not a skill
        skills.append(
            AgentSkill(
                id=definition.name,
                name=definition.name,
                description=definition.description or definition.name,
                tags=sorted(definition.tags) or ["tool"],
            )
        )
    if not skills:
        name = agent.name or "agent"
        skills.append(
            AgentSkill(
                id="chat",
                name=name,
                description=agent.description or f"Talk to {name}.",
                tags=["chat"],
            )
        )
    return skills


def agent_card(
    agent: Any,
    *,
    url: str | None = None,
    skills: Sequence[AgentSkill] | None = None,
    version: str | None = None,
    streaming: bool = True,
) -> AgentCard:
    """The A2A agent card of ``agent``.

    Args:
        agent: the ``dive.Agent`` served.
        url: the JSON-RPC endpoint; None leaves the interface out (``a2a_app`` fills it in
            from each request).
        skills: the skills to advertise (default: one per tool, or one ``chat`` skill for
            an agent without tools).
        version: the card's version (default: the agent's ``version``, else ``"1.0.0"``).
        streaming: advertise ``SendStreamingMessage`` (``message/stream``).

    Returns:
        An ``a2a.types.AgentCard``; pass it (changed as you like) as ``a2a_app(card=...)``.
    """
    card = AgentCard(
        name=agent.name or "dive agent",
        description=agent.description or f"{agent.name or 'A dive agent'}, served over A2A.",
        version=version or agent.version or "1.0.0",
        capabilities=AgentCapabilities(streaming=streaming, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain"],
        skills=list(skills) if skills is not None else _skills(agent),
    )
    if url is not None:
        card = with_url(card, url)
    return card


def with_url(card: AgentCard, url: str) -> AgentCard:
    """A copy of ``card`` whose JSON-RPC interface is at ``url`` (other interfaces kept)."""
    out = AgentCard()
    out.CopyFrom(card)
    kept = [i for i in out.supported_interfaces if i.protocol_binding != TransportProtocol.JSONRPC]
    del out.supported_interfaces[:]
    out.supported_interfaces.append(
        AgentInterface(
            url=url,
            protocol_binding=TransportProtocol.JSONRPC,
            protocol_version=PROTOCOL_VERSION_CURRENT,
        )
    )
    out.supported_interfaces.extend(kept)
    return out
