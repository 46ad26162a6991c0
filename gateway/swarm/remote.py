"""A remote agent (any Peer: A2A over HTTP, local://, MCP) as a swarm member.

The coordinator sends it one task per turn on the swarm's session id: a text part with
the input (the user's words, or why a transfer it asked for was refused) and a data
part with the conversation as the history policy shapes it. Its answer streams back as
text deltas; a ``handoff`` line (or ``metadata.handoff`` on a non-streamed task) asks
the coordinator to transfer the conversation, which the Runner resolves and counts like
any other hop: ``remote_step`` records the request as a transfer tool call, so every agent
reads one kind of history, and hands it to the runner as the step's ``Transfer``.

Each turn is one call of the engine agent tools use (gateway/calls/engine.py), recorded in
the run with ``member`` naming the agent: the same deadlines (``timeout_s`` for a
``tasks/send``, ``idle_timeout_s`` for a stream's silence), the same checks of what the
peer sends, the same best-effort ``tasks/cancel`` under the gateway's cancel deadline, and
the same failure reasons. A turn that does not continue an earlier task gets its id from
the call: minted there for a peer that lets the caller name tasks (so the cancel has an id
even before the first stream line), or the one the server names (JSON-RPC).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from gateway import defaults
from gateway.calls.budget import Budget
from gateway.calls.engine import AgentCall, CallSpec
from gateway.calls.reattach import Reattach
from gateway.calls.tool import Mode
from gateway.errors import AgentHandoffError, AgentToolError
from gateway.models.base import ChatMessage, TextDelta
from gateway.peers.base import Peer
from gateway.peers.limits import PeerLimits
from gateway.recording.events import EventType
from gateway.recording.recorder import RunRecorder
from gateway.swarm.admission import Refusal, Targets
from gateway.swarm.handoff import Handoff, specialty_of
from gateway.swarm.health import AgentHealth, unreachable
from gateway.swarm.history_policy import HistoryPolicy, handoff_payload, last_user_text, shown_to
from gateway.swarm.member import SwarmMember
from gateway.swarm.registry import ConnectURI, TargetPolicy
from gateway.swarm.sessions.base import HandoffRecord, Session
from gateway.swarm.turn import FALLBACK_ANSWER, Step, Transfer, Turn
from protocol import AgentCard, Artifact, DataPart, HandoffRequest, Message, TaskSendParams, TaskState, TextPart
from protocol.handoff_names import transfer_tool_name

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
    artifacts: tuple[Artifact, ...] = ()
    message: Message | None = None
    """The agent's direct reply (a Message that started no task), when that is how it answered."""


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
        budget: Budget | None = None,
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
        self.budget = budget or Budget()
        self.health = AgentHealth(self.name)
        """What one task of this agent may cost, as it reports (a turn, or a call through the gateway's proxy)."""

    @classmethod
    async def connect(
        cls,
        uri: str,
        gateway: Gateway,
        *,
        name: str | None = None,
        description: str | None = None,
        token: str | None = None,
        budget: Budget | None = None,
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
            budget=budget,
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

    async def ask(
        self, params: TaskSendParams, recorder: RunRecorder, reattach: Reattach | None = None
    ) -> AsyncGenerator[TextDelta | RemoteReply, None]:
        """Text deltas as they arrive, then one RemoteReply; the call's events go to ``recorder``.

        ``reattach``: the task another process sent and did not see through, followed again instead.

        Raises the call's AgentToolError (a timeout, a task that ended ``failed``, a bad answer).
        """
        spec = CallSpec(
            agent=self.uri,
            mode=Mode("streaming" if self.streaming else "sync"),
            timeout_s=self.timeout_s,
            idle_timeout_s=self.idle_timeout_s,
            cancel_timeout_s=self.cancel_timeout_s,
            budget=self.budget,
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
            reattach=reattach,
        )
        self.health.admit()
        try:
            if self.streaming:
                async with aclosing(call.reads()) as reads:
                    async for pieces in reads:
                        if call.result.reply is None:  # a direct reply's text is the reply's, not a stream's
                            for piece in pieces:
                                yield TextDelta(piece)
            else:
                await call.run()
        except AgentToolError as exc:
            if unreachable(exc):
                self.health.failed(exc)
            else:
                self.health.succeeded()  # it answered, if not as hoped: it is reachable
            raise
        except BaseException:
            self.health.abandoned()
            raise
        self.health.succeeded()
        result = call.result
        state = TaskState(result.state) if result.state else TaskState.COMPLETED
        yield RemoteReply(
            result.task_id or "",
            result.text,
            state,
            result.handoff,
            result.cost_usd,
            tuple(result.artifacts),
            result.reply,
        )

    def __repr__(self) -> str:
        return f"RemoteAgent(name={self.name!r}, uri={self.uri!r})"


def connector(gateway: Gateway | None, policy: TargetPolicy) -> ConnectURI | None:
    """How a URI target becomes a member: through the gateway, on a host it allows; None when URIs are off."""
    if not policy.connect_uris or gateway is None:
        return None

    async def connect(uri: str) -> SwarmMember:
        if not gateway.allowed_hosts.allows(uri):
            raise AgentHandoffError(f"{uri!r} is not on a host the gateway may connect to", target=uri)
        return await RemoteAgent.connect(uri, gateway)

    return connect


async def remote_step(
    turn: Turn, remote: RemoteAgent, targets: Targets, *, history: HistoryPolicy, max_handoffs_per_turn: int
) -> Step:
    """One task on ``remote``: its text streamed, then its answer, or the transfer it asked for."""
    session = turn.session
    handoffs_allowed = not turn.transfers_blocked
    arrival, turn.arrival = turn.arrival, None
    told, turn.remote_input = turn.remote_input, None
    message_id = None
    if told is None:  # the user's words, unchanged: with the caller's id for them, once per turn
        message_id, turn.message_id = turn.message_id, None
    params = task_params(
        task_id=session.remote_tasks.pop(remote.name, None),
        session_id=session.id,
        text=told or last_user_text(session.history),
        conversation=await shown_to(history, remote.name, session),
        handoff=None if arrival is None else _handoff_metadata(arrival, session),
        message_id=message_id,
        metadata={
            "session_id": session.id,
            "agent": remote.name,
            "path": list(turn.path),
            "hop": turn.handoffs,
            "max_handoffs_per_turn": max_handoffs_per_turn,
            "handoffs_allowed": handoffs_allowed,
            "history_policy": history.name,
        },
    )
    reply: RemoteReply | None = None
    reattach, turn.reattach = turn.reattach, None  # a turn taken over: the task in flight, followed again
    if reattach is not None and reattach.unshown:
        await turn.emit(EventType.TEXT_DELTA, agent=remote.name, text=reattach.unshown, remote=True)
    async with aclosing(remote.ask(params, turn.recorder, reattach)) as items:
        async for item in items:
            if isinstance(item, TextDelta):
                await turn.emit(EventType.TEXT_DELTA, agent=remote.name, text=item.text, remote=True)
                yield None
            else:
                reply = item
    assert reply is not None
    if reply.state == TaskState.INPUT_REQUIRED:
        session.remote_tasks[remote.name] = reply.task_id
    if reply.handoff is None:
        message: ChatMessage = {"role": "assistant", "content": reply.text or None, "sender": remote.name}
        await turn.say(message, state=reply.state.value, remote=True, cost_usd=reply.cost_usd)
        asks = reply.state is TaskState.INPUT_REQUIRED  # the agent asked a question: the turn waits for the user
        turn.finish(reply.text, TaskState.INPUT_REQUIRED if asks else TaskState.COMPLETED)
        return
    transfer = await _transfer_asked(turn, reply, reply.handoff, targets, handoffs_allowed)
    if transfer is not None:
        yield transfer


async def _transfer_asked(
    turn: Turn, reply: RemoteReply, request: HandoffRequest, targets: Targets, handoffs_allowed: bool
) -> Transfer | None:
    """The request recorded as a transfer tool call; the Transfer, or None when the target may not be named.

    A refused request is put to the remote agent once more (``remote_input``); if it
    asks again although transfers were over, its text is the answer.
    """
    remote = turn.agent.name
    forbidden = targets.forbidden_for_remote(request.target)
    target = None if forbidden else await targets.named(request.target)
    call_id = "handoff_" + uuid.uuid4().hex[:16]
    tool = transfer_tool_name(request.target if target is None else target.name)
    arguments = {"reason": request.reason} if request.reason else {}
    function = {"name": tool, "arguments": orjson.dumps(arguments).decode()}
    call = {"id": call_id, "type": "function", "function": function}
    await turn.say(
        {"role": "assistant", "content": reply.text or None, "sender": remote, "tool_calls": [call]},
        remote=True,
        cost_usd=reply.cost_usd,
    )
    await turn.emit(EventType.TOOL_CALL, agent=remote, tool=tool, call_id=call_id, arguments=arguments, remote=True)
    if target is None:
        assert forbidden is not None
        cause, detail = forbidden
        turn.transfers_blocked = True
        await turn.emit(
            EventType.HANDOFF_REFUSED,
            source=remote,
            target=request.target,
            cause=cause,
            reason=request.reason,
            detail=detail,
            remote=True,
        )
        await turn.tool_result(remote, call_id, tool, f"Transfer refused: {detail}", remote=True)
        turn.finish(reply.text or FALLBACK_ANSWER)
        return None

    async def answer(text: str) -> None:
        await turn.tool_result(remote, call_id, tool, text, remote=True)

    def refused(refusal: Refusal) -> None:
        if handoffs_allowed:
            turn.remote_input = f"{refusal.message} Your request to transfer to {target.name!r} was not carried out."
        else:
            turn.finish(reply.text or FALLBACK_ANSWER)

    return Transfer(target, Handoff(target.name, request.reason, payload=dict(request.payload or {})), answer, refused)


def _handoff_metadata(arrival: HandoffRecord, session: Session) -> dict[str, Any]:
    """``metadata.handoff`` of the first task a remote agent gets after a transfer to it, with the HandoffPayload."""
    payload = handoff_payload(session.history[: arrival.at], arrival, session.context_variables)
    return {
        "source": arrival.source,
        "target": arrival.target,
        "reason": arrival.reason,
        "payload": payload.model_dump(mode="json"),
    }


def task_params(
    *,
    session_id: str,
    text: str,
    conversation: list[ChatMessage],
    metadata: dict[str, Any],
    task_id: str | None = None,
    handoff: dict[str, Any] | None = None,
    message_id: str | None = None,
) -> TaskSendParams:
    """One turn for a remote agent: the input as text, the conversation as data.

    Task metadata: ``switchboard`` (the swarm's bookkeeping) and, on its first task after a
    transfer to it, ``handoff`` (``source``, ``target``, ``reason``, ``payload``: the
    HandoffPayload). Without ``task_id`` it is a new task (its id minted by the call, where the
    peer lets the caller name tasks). ``message_id``: the caller's id of ``text``, kept.
    """
    parts: list[TextPart | DataPart] = [TextPart(text=text or "(no text)")]
    parts.append(DataPart(data={"conversation": transcript(conversation)}))
    return TaskSendParams(
        id=task_id,
        session_id=session_id,
        message=Message(role="user", parts=parts, message_id=message_id),
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
    """The card's description, then what its skills add to it (a skill that only says it again adds nothing)."""
    description = (card.description or "").strip()
    said = description.casefold()
    skills: list[str] = []
    for skill in card.skills:
        text = (skill.description or skill.name).strip()
        if text and text.casefold() not in said:
            skills.append(text)
            said += " " + text.casefold()
    return " ".join(part for part in (description, "; ".join(skills)) if part)
