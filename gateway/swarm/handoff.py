"""Transfer tools: one synthesized ``transfer_to_<name>`` tool per handoff target.

Names follow protocol.handoff_names (the one place the naming rules live); the
description tells the model who the target is, so a router (or the offline model) can
pick the right one from the user's words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.models.base import ToolSpec, transfer_description
from gateway.swarm.member import SwarmMember
from protocol.handoff_names import transfer_tool_names

SPECIALTY_MAX_CHARS = 160
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Handoff:
    """What a transfer tool returns: the runner switches the conversation to this agent.

    ``context_variables`` are merged into the session on a successful transfer;
    ``payload`` is what a remote agent attached to its request (shown to the next agent
    by the structured history policy).
    """

    target_agent_name: str
    reason: str | None = None
    context_variables: dict[str, Any] = field(default_factory=dict)
    payload: dict[str, Any] | None = None


_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "description": "Why the conversation is handed off (optional)."},
    },
    "required": [],
    "additionalProperties": False,
}


class TransferTool:
    """Calling it returns ``Handoff(target_agent_name, reason)``; the runner does the rest."""

    def __init__(self, name: str, target: SwarmMember) -> None:
        self.name = name
        self.target = target
        self.description = transfer_description(target.name, target.specialty)
        self.parameters = _PARAMETERS

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    async def invoke(self, arguments: dict[str, Any], context_variables: dict[str, Any]) -> Handoff:
        reason = arguments.get("reason")
        return Handoff(self.target.name, str(reason) if reason else None)

    def __repr__(self) -> str:
        return f"TransferTool({self.name!r} -> {self.target.name!r})"


def transfer_tools(targets: Sequence[SwarmMember], taken: Iterable[str] = ()) -> list[TransferTool]:
    """One tool per target, in order, avoiding the agent's own tool names."""
    names = transfer_tool_names([t.name for t in targets], taken=taken)
    return [TransferTool(names[t.name], t) for t in targets]


def specialty_of(text: str, limit: int = SPECIALTY_MAX_CHARS) -> str:
    """A one-line summary of instructions: whitespace collapsed, cut at a word near ``limit``."""
    flat = _WHITESPACE.sub(" ", text).strip()
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0].rstrip(" ,;:.")
    return cut + "..."
