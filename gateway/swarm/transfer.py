"""Carrying a transfer out: admitted or refused, then the conversation switches or the fallback takes it.

Every transfer an agent asks for takes this one path, a local agent's tool call and a
remote agent's request alike (both arrive as the step's ``Transfer``): admitted or refused
(admission.py), the call that asked answered, then the switch, or, for a refusal, the
fallback (fallback.py) or the agent's own way of going on. The semantic router's and the
supervisor's takeovers switch the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from gateway.errors import AgentHandoffError
from gateway.models.base import HANDOFF_SUCCESS
from gateway.recording.events import EventType
from gateway.swarm.admission import Refusal, refusal
from gateway.swarm.fallback import ESCALATION_MESSAGE, HUMAN, Fallback, escalates, supervisor_name
from gateway.swarm.handoff import Handoff
from gateway.swarm.member import SwarmMember
from gateway.swarm.registry import find_by_name
from gateway.swarm.remote import RemoteAgent
from gateway.swarm.turn import Transfer, Turn
from gateway.telemetry import spans
from protocol import TaskState


@dataclass(frozen=True)
class Handover:
    """The runner's transfer rules: the handoff limit, the fallback, and the agents its supervisor is found among."""

    max_handoffs_per_turn: int
    fallback: Fallback
    agents: Callable[[], dict[str, SwarmMember]]

    async def carry_out(self, turn: Turn, transfer: Transfer) -> None:
        """Admit or refuse, answer the asking call, then switch, or let the fallback or the agent go on."""
        target, handoff = transfer.target, transfer.handoff
        refused = await self._admit(turn, target, handoff)
        await transfer.answer(refused.message if refused else _handoff_success(target.name, handoff.reason))
        if refused is None:
            await switch(turn, target, handoff)
        elif not (escalates(self.fallback, refused.cause) and await self._fall_back(turn, refused, target)):
            transfer.refused(refused)

    def refusal(self, turn: Turn, target: SwarmMember) -> Refusal | None:
        """Why the turn's rules refuse a transfer to ``target`` now; None when they admit it."""
        return refusal(
            turn.agent.name,
            target.name,
            path=turn.path,
            transfers_blocked=turn.transfers_blocked,
            max_handoffs_per_turn=self.max_handoffs_per_turn,
        )

    async def _admit(self, turn: Turn, target: SwarmMember, handoff: Handoff) -> Refusal | None:
        """None when the transfer may happen; else why not, recorded, and transfers end for the turn."""
        source = turn.agent.name
        refused = self.refusal(turn, target)
        if refused is None:
            return None
        if refused.cause == "max_handoffs_per_turn":
            await turn.emit(
                EventType.LIMIT_REACHED, agent=source, limit="max_handoffs_per_turn", value=self.max_handoffs_per_turn
            )
        elif refused.cycle is not None:
            await turn.emit(
                EventType.CYCLE_DETECTED, agent=source, source=source, target=target.name, path=refused.cycle
            )
        turn.transfers_blocked = True
        await turn.emit(
            EventType.HANDOFF_REFUSED, source=source, target=target.name, cause=refused.cause, reason=handoff.reason
        )
        return refused

    async def _fall_back(self, turn: Turn, refused: Refusal, target: SwarmMember) -> bool:
        """The limit or the cycle tripped: a human or the supervisor takes the conversation.

        False when the supervisor already holds it: it answers, as with ``current``.
        """
        name = supervisor_name(self.fallback)
        supervisor = None if name is None else find_by_name(self.agents(), name)
        if name is not None and supervisor is None:
            raise AgentHandoffError(f"the fallback agent {name!r} is not registered with the Runner", target=name)
        if supervisor is turn.agent:
            return False
        await turn.emit(
            EventType.ESCALATED,
            agent=turn.agent.name,
            reason=refused.cause,
            target=target.name,
            path=list(turn.path),
            fallback=HUMAN if supervisor is None else supervisor.name,
        )
        if supervisor is None:
            await turn.say({"role": "assistant", "content": ESCALATION_MESSAGE, "sender": turn.agent.name})
            turn.finish(ESCALATION_MESSAGE, TaskState.INPUT_REQUIRED)
        else:
            await switch(turn, supervisor, Handoff(supervisor.name, f"fallback: {refused.cause}"), "fallback")
        return True


async def switch(turn: Turn, target: SwarmMember, handoff: Handoff, cause: str | None = None) -> None:
    """The transfer itself: new active agent, context updates, the record history policies read."""
    source = turn.agent
    turn.path.append(target.name)
    turn.last_handoff = dataclasses.replace(handoff, target_agent_name=target.name)
    turn.agent = target
    turn.arrival = turn.session.set_active_agent(
        target, handoff.context_variables, reason=handoff.reason, payload=handoff.payload, source=source.name
    )
    with spans.handoff(source.name, target.name, handoff.reason, turn.handoffs, turn.recorder.run_id):
        await turn.emit(
            EventType.HANDOFF,
            source=source.name,
            target=target.name,
            reason=handoff.reason,
            hop=turn.handoffs,
            remote=isinstance(source, RemoteAgent) or isinstance(target, RemoteAgent),
        )
        await turn.emit(
            EventType.AGENT_CHANGED,
            previous=source.name,
            agent=target.name,
            **({} if cause is None else {"cause": cause}),
        )


def _handoff_success(target: str, reason: str | None) -> str:
    """The tool result of a transfer carried out, in the shape OpenAI swarm's agents read."""
    return orjson.dumps(
        {"status": HANDOFF_SUCCESS, "assistant": target, "reason": reason or "Specialist routing"}
    ).decode()
