"""A remote agent (any Peer: A2A over HTTP, local://, MCP) as a swarm member.

The coordinator sends it one task per turn on the swarm's session id: a text part with
the input (the user's words, or why a transfer it asked for was refused) and a data
part with the conversation as the history policy shapes it. Its answer streams back as
text deltas; a ``handoff`` line (or ``metadata.handoff`` on a non-streamed task) asks
the coordinator to transfer the conversation, which the Runner resolves and counts like
any other hop.

Deadlines: a ``tasks/send`` must finish within ``timeout_s`` (default 60 s); a stream may
run as long as it keeps talking, but a silence longer than ``idle_timeout_s`` (default
30 s) ends it. Either way a best-effort ``tasks/cancel`` goes out when the task id is
known, and ``AgentToolTimeout`` fails the turn (the session lock is released, nothing is
saved). The task id is minted here (``task_<hex>``) when the turn does not continue an
earlier task, so the cancel always has an id, even before the first stream line arrives.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import anyio
from pydantic import ValidationError

from gateway.errors import AgentToolError, AgentToolTimeout, PeerProtocolError
from gateway.idle_timeout import IdleTimeout, with_idle_timeout
from gateway.models.base import ChatMessage, TextDelta
from gateway.peers.base import Peer, StreamTooLarge
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
    parts_text,
)

from .agent import SwarmMember
from .handoff import specialty_of

if TYPE_CHECKING:
    from gateway.gateway import Gateway

DEFAULT_REMOTE_TIMEOUT_S = 60.0
DEFAULT_REMOTE_IDLE_TIMEOUT_S = 30.0
_CANCEL_TIMEOUT_S = 2.0


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
        timeout_s: float = DEFAULT_REMOTE_TIMEOUT_S,
        idle_timeout_s: float = DEFAULT_REMOTE_IDLE_TIMEOUT_S,
    ) -> None:
        self.peer = peer
        self.card = card
        self.uri = peer.uri
        self.name = name or card.name
        self.description = description or _card_description(card) or self.name
        self.streaming = card.capabilities.streaming if streaming is None else streaming
        self.timeout_s = timeout_s
        self.idle_timeout_s = idle_timeout_s
        self.authenticated = False
        """Whether calls carry a credential of this agent's own."""

    @classmethod
    async def connect(
        cls,
        uri: str,
        gateway: Gateway,
        *,
        name: str | None = None,
        description: str | None = None,
        token: str | None = None,
    ) -> RemoteAgent:
        """Resolve ``uri`` through the gateway (one pooled client) and fetch the agent's card.

        ``token`` is sent to this agent only (``Authorization: Bearer``).
        """
        peer = gateway.peer(uri, token=token)
        remote = cls(peer, await peer.card(), name=name, description=description)
        remote.authenticated = token is not None
        return remote

    @property
    def specialty(self) -> str:
        return specialty_of(self.description)

    @property
    def handoffs(self) -> Sequence[SwarmMember]:
        """A remote agent's own peers are its business; it names them when it asks."""
        return ()

    async def ask(self, params: TaskSendParams) -> AsyncIterator[TextDelta | RemoteReply]:
        """Text deltas as they arrive, then one RemoteReply; AgentToolTimeout past a deadline."""
        if not self.streaming:
            with anyio.move_on_after(self.timeout_s) as deadline:
                task = await self.peer.send(params)
            if deadline.cancelled_caught:
                await self._give_up(params.id, f"{self.uri} did not answer within {self.timeout_s:g} s", "timeout")
            yield _reply_from_task(task)
            return
        task_id = params.id or ""
        text: list[str] = []
        handoff: HandoffRequest | None = None
        cost = 0.0
        async with (
            self.peer.subscribe(params) as stream,
            aclosing(with_idle_timeout(stream, self.idle_timeout_s)) as items,
        ):
            try:
                async for item in items:
                    if isinstance(item, StreamTooLarge):
                        await self._cancel(task_id)
                        raise PeerProtocolError(
                            f"{self.uri} streamed more than {item.limit} bytes in one answer", reason="answer_too_large"
                        )
                    if not isinstance(item, StatusEvent | ArtifactEvent | HandoffEvent):
                        continue
                    task_id = item.id
                    cost += item.cost_usd or 0.0
                    if isinstance(item, ArtifactEvent):
                        piece = parts_text(item.artifact.parts)
                        if piece:
                            text.append(piece)
                            yield TextDelta(piece)
                    elif isinstance(item, HandoffEvent):
                        handoff = handoff or item.handoff
                    elif item.final:
                        message = item.status.message.text if item.status.message is not None else ""
                        yield RemoteReply(task_id, "".join(text) or message, item.status.state, handoff, cost)
                        return
            except IdleTimeout:
                await self._give_up(task_id, f"no data from {self.uri} for {self.idle_timeout_s:g} s", "idle_timeout")
        raise PeerProtocolError(f"the stream from {self.uri} ended without a final line", reason="cut_off")

    async def _give_up(self, task_id: str | None, message: str, reason: str) -> NoReturn:
        """Best-effort ``tasks/cancel`` (when the task id is known), then the timeout error."""
        await self._cancel(task_id)
        seconds = self.timeout_s if reason == "timeout" else self.idle_timeout_s
        raise AgentToolTimeout(message, reason=reason, seconds=seconds)

    async def _cancel(self, task_id: str | None) -> None:
        if task_id:
            with anyio.move_on_after(_CANCEL_TIMEOUT_S, shield=True):
                with suppress(AgentToolError):
                    await self.peer.cancel(task_id)

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
    """One turn for a remote agent: the input as text, the conversation as data.

    Without ``task_id`` a new id is minted, so a timed-out task can always be cancelled.
    """
    parts: list[TextPart | DataPart] = [TextPart(text=text or "(no text)")]
    parts.append(DataPart(data={"conversation": transcript(conversation)}))
    return TaskSendParams(
        id=task_id or "task_" + uuid.uuid4().hex,
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
