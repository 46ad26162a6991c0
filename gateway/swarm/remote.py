"""A remote agent (any Peer: A2A over HTTP, local://, MCP) as a swarm member.

The coordinator sends it one task per turn on the swarm's session id: a text part with
the input (the user's words, or why a transfer it asked for was refused) and a data
part with the conversation as the history policy shapes it. Its answer streams back as
text deltas; a ``handoff`` line (or ``metadata.handoff`` on a non-streamed task) asks
the coordinator to transfer the conversation, which the Runner resolves and counts like
any other hop.

Each turn is one call of the engine agent tools use (gateway/calls/engine.py), recorded in
the run with ``member`` naming the agent: the same deadlines (``timeout_s`` for a
``tasks/send``, ``idle_timeout_s`` for a stream's silence), the same checks of what the
peer sends, the same best-effort ``tasks/cancel`` under the gateway's cancel deadline, and
the same failure reasons. A turn that does not continue an earlier task gets its id from
the call: minted there for a peer that lets the caller name tasks (so the cancel has an id
even before the first stream line), or the one the server names (JSON-RPC).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway import defaults
from gateway.calls.engine import AgentCall, CallSpec
from gateway.calls.tool import Mode
from gateway.models.base import ChatMessage, TextDelta
from gateway.peers.base import Peer
from gateway.peers.limits import PeerLimits
from gateway.recording.recorder import RunRecorder
from gateway.swarm.handoff import specialty_of
from gateway.swarm.member import SwarmMember
from protocol import AgentCard, DataPart, HandoffRequest, Message, TaskSendParams, TaskState, TextPart

if TYPE_CHECKING:
    from gateway.calls.coordinator import Gateway


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
        timeout_s: float = defaults.REMOTE_TIMEOUT_S,
        idle_timeout_s: float = defaults.REMOTE_IDLE_TIMEOUT_S,
        cancel_timeout_s: float = PeerLimits.cancel_timeout_s,
        authenticated: bool = False,
    ) -> None:
        self.peer = peer
        self.card = card
        self.uri = peer.uri
        self.name = name or card.name
        self.description = description or _card_description(card) or self.name
        self.streaming = card.capabilities.streaming if streaming is None else streaming
        self.timeout_s = timeout_s
        self.idle_timeout_s = idle_timeout_s
        self.cancel_timeout_s = cancel_timeout_s
        self.authenticated = authenticated
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
        return cls(
            peer,
            await peer.card(),
            name=name,
            description=description,
            cancel_timeout_s=gateway.limits.cancel_timeout_s,
            authenticated=token is not None,
        )

    @property
    def binding(self) -> str:
        """How it is spoken to (a2a-ndjson, jsonrpc-1.0, jsonrpc-0.3, local, mcp)."""
        return self.peer.binding

    @property
    def specialty(self) -> str:
        return specialty_of(self.description)

    @property
    def handoffs(self) -> Sequence[SwarmMember]:
        """A remote agent's own peers are its business; it names them when it asks."""
        return ()

    @property
    def examples(self) -> Sequence[str]:
        """The example utterances of its card's skills (the semantic router reads them)."""
        return [example for skill in self.card.skills for example in skill.examples]

    async def ask(self, params: TaskSendParams, recorder: RunRecorder) -> AsyncGenerator[TextDelta | RemoteReply, None]:
        """Text deltas as they arrive, then one RemoteReply; the call's events go to ``recorder``.

        Raises the call's AgentToolError (a timeout, a task that ended ``failed``, a bad answer).
        """
        spec = CallSpec(
            agent=self.uri,
            mode=Mode("streaming" if self.streaming else "sync"),
            timeout_s=self.timeout_s,
            idle_timeout_s=self.idle_timeout_s,
            cancel_timeout_s=self.cancel_timeout_s,
            member=self.name,
        )
        call = AgentCall(
            lambda: self.peer,
            recorder,
            spec,
            params.message,
            session_id=params.session_id,
            task_id=params.id,
            metadata=params.metadata,
        )
        if self.streaming:
            async with aclosing(call.stream()) as pieces:
                async for piece in pieces:
                    yield TextDelta(piece)
        else:
            await call.run()
        result = call.result
        state = TaskState(result.state) if result.state else TaskState.COMPLETED
        yield RemoteReply(result.task_id or "", result.text, state, result.handoff, result.cost_usd)

    def __repr__(self) -> str:
        return f"RemoteAgent(name={self.name!r}, uri={self.uri!r})"


def task_params(
    *,
    session_id: str,
    text: str,
    conversation: list[ChatMessage],
    metadata: dict[str, Any],
    task_id: str | None = None,
    handoff: dict[str, Any] | None = None,
) -> TaskSendParams:
    """One turn for a remote agent: the input as text, the conversation as data.

    Task metadata: ``switchboard`` (the swarm's bookkeeping) and, on its first task after a
    transfer to it, ``handoff`` (``source``, ``target``, ``reason``, ``payload``: the
    HandoffPayload). Without ``task_id`` it is a new task (its id minted by the call, where the
    peer lets the caller name tasks).
    """
    parts: list[TextPart | DataPart] = [TextPart(text=text or "(no text)")]
    parts.append(DataPart(data={"conversation": transcript(conversation)}))
    return TaskSendParams(
        id=task_id,
        session_id=session_id,
        message=Message(role="user", parts=parts),
        metadata={"switchboard": metadata, **({"handoff": handoff} if handoff is not None else {})},
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


def _card_description(card: AgentCard) -> str:
    skills = "; ".join(s.description or s.name for s in card.skills)
    return " ".join(part for part in (card.description or "", skills) if part)
