"""A remote agent (any Peer: A2A over HTTP, local://, MCP) as a swarm member.

The coordinator sends it one task per turn on the swarm's session id: a text part with
the input (the user's words, or why a transfer it asked for was refused) and a data
part with the conversation as the history policy shapes it. Its answer streams back as
text deltas; a ``handoff`` line (or ``metadata.handoff`` on a non-streamed task) asks
the coordinator to transfer the conversation, which the Runner resolves and counts like
any other hop.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from gateway.errors import PeerProtocolError
from gateway.models.base import ChatMessage, TextDelta
from gateway.peers.base import Peer
from protocol import (
    AgentCard,
    ArtifactEvent,
    DataPart,
    HandoffEvent,
    HandoffRequest,
    Message,
    StatusEvent,
    Task,
    TaskSendParams,
    TaskState,
    TextPart,
)

from .agent import SwarmMember
from .handoff import specialty_of


@dataclass(frozen=True)
class RemoteReply:
    """How one remote turn ended: its text, the transfer it asked for, and its task state."""

    task_id: str
    text: str
    state: TaskState
    handoff: HandoffRequest | None = None
    cost_usd: float = 0.0


class RemoteAgent:
    """A swarm member that runs elsewhere; build one with ``await RemoteAgent.connect(uri, gateway)``."""

    def __init__(
        self,
        peer: Peer,
        card: AgentCard,
        *,
        name: str | None = None,
        description: str | None = None,
        streaming: bool | None = None,
    ) -> None:
        self.peer = peer
        self.card = card
        self.uri = peer.uri
        self.name = name or card.name
        self.description = description or _card_description(card) or self.name
        self.streaming = card.capabilities.streaming if streaming is None else streaming

    @classmethod
    async def connect(
        cls, uri: str, gateway: Any, *, name: str | None = None, description: str | None = None
    ) -> RemoteAgent:
        """Resolve ``uri`` through the gateway (one pooled client) and fetch the agent's card."""
        peer = gateway.peer(uri)
        if inspect.isawaitable(peer):
            peer = await peer
        return cls(peer, await peer.card(), name=name, description=description)

    @property
    def specialty(self) -> str:
        return specialty_of(self.description)

    @property
    def handoffs(self) -> Sequence[SwarmMember]:
        """A remote agent's own peers are its business; it names them when it asks."""
        return ()

    async def ask(self, params: TaskSendParams) -> AsyncIterator[TextDelta | RemoteReply]:
        """Text deltas as they arrive, then one RemoteReply."""
        if not self.streaming:
            yield _reply_from_task(await self.peer.send(params))
            return
        task_id = params.id or ""
        text: list[str] = []
        handoff: HandoffRequest | None = None
        cost = 0.0
        async with self.peer.subscribe(params) as items:
            async for item in items:
                if not isinstance(item, StatusEvent | ArtifactEvent | HandoffEvent):
                    continue
                task_id = item.id
                cost += item.cost_usd or 0.0
                if isinstance(item, ArtifactEvent):
                    piece = "".join(p.text for p in item.artifact.parts if isinstance(p, TextPart))
                    if piece:
                        text.append(piece)
                        yield TextDelta(piece)
                elif isinstance(item, HandoffEvent):
                    handoff = handoff or item.handoff
                elif item.final:
                    message = item.status.message.text if item.status.message is not None else ""
                    yield RemoteReply(task_id, "".join(text) or message, item.status.state, handoff, cost)
                    return
        raise PeerProtocolError(f"the stream from {self.uri} ended without a final line", reason="cut_off")

    def __repr__(self) -> str:
        return f"RemoteAgent(name={self.name!r}, uri={self.uri!r})"


def task_params(
    *,
    session_id: str,
    text: str,
    conversation: list[ChatMessage],
    metadata: dict[str, Any],
    task_id: str | None = None,
) -> TaskSendParams:
    """One turn for a remote agent: the input as text, the conversation as data."""
    parts: list[TextPart | DataPart] = [TextPart(text=text or "(no text)")]
    parts.append(DataPart(data={"conversation": transcript(conversation)}))
    return TaskSendParams(
        id=task_id,
        session_id=session_id,
        message=Message(role="user", parts=parts),
        metadata={"switchboard": metadata},
    )


def transcript(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Chat messages in a plain form a non-OpenAI agent can read (agent names kept)."""
    lines: list[dict[str, Any]] = []
    for message in messages:
        line: dict[str, Any] = {"role": message.get("role"), "content": message.get("content") or ""}
        if message.get("sender"):
            line["agent"] = message["sender"]
        if message.get("tool_calls"):
            line["tool_calls"] = [
                {
                    "id": c.get("id"),
                    "name": (c.get("function") or {}).get("name"),
                    "arguments": (c.get("function") or {}).get("arguments"),
                }
                for c in message["tool_calls"]
            ]
        if message.get("tool_call_id"):
            line["tool_call_id"] = message["tool_call_id"]
        lines.append(line)
    return lines


def _reply_from_task(task: Task) -> RemoteReply:
    handoff: HandoffRequest | None = None
    raw = task.metadata.get("handoff")
    if isinstance(raw, dict):
        try:
            handoff = HandoffRequest.model_validate(raw)
        except ValidationError:
            handoff = None
    cost = task.metadata.get("cost_usd")
    return RemoteReply(
        task.id, task.output_text, task.status.state, handoff, float(cost) if isinstance(cost, int | float) else 0.0
    )


def _card_description(card: AgentCard) -> str:
    skills = "; ".join(s.description or s.name for s in card.skills)
    return " ".join(part for part in (card.description or "", skills) if part)
