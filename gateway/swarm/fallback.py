"""Who takes the conversation when the handoff limit or a ping-pong cycle trips: the runner's fallback.

The literature's defence against agents passing a user around is to hand control to a
supervisor or a human. ``Runner(fallback=...)`` (``[swarm] fallback``) picks:

- ``current`` (the default): the transfer is refused, the agent holding the conversation
  is told why and answers (admission.py);
- an agent (a supervisor, or its name): it takes the conversation at once and answers;
  transfers are over for the turn, so it cannot pass the user on again;
- ``human``: the turn ends in state ``input-required`` with ``ESCALATION_MESSAGE``, for a
  person to take it from there; the session stays with the agent that held it.

Either of the last two records an ``escalated`` event with the reason and the path of
agents. Other refusals (a transfer to the agent itself, a second transfer in one
response, a target a remote agent may not name) never escalate.
"""

from __future__ import annotations

from gateway.swarm.member import SwarmMember

CURRENT = "current"
HUMAN = "human"
ESCALATING_CAUSES = frozenset({"max_handoffs_per_turn", "cycle"})
ESCALATION_MESSAGE = "I am handing this conversation to a person on our team, who will answer you here."

Fallback = SwarmMember | str
"""``current``, ``human``, a supervisor agent, or a supervisor's name."""


def escalates(fallback: Fallback, cause: str) -> bool:
    """Whether a refusal for ``cause`` goes to the fallback rather than back to the current agent."""
    return cause in ESCALATING_CAUSES and fallback != CURRENT


def supervisor_name(fallback: Fallback) -> str | None:
    """The supervisor's name; None for ``current`` and ``human``."""
    if isinstance(fallback, str):
        return None if fallback in (CURRENT, HUMAN) else fallback
    return fallback.name
