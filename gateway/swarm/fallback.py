"""When a turn cannot go on as asked: who takes the conversation when a limit trips, what a failed run says.

The literature's defence against agents passing a user around is to hand control to a
supervisor or a human. ``Runner(fallback=...)`` (``[swarm] fallback``) picks who takes the
conversation when the handoff limit or a ping-pong cycle trips:

- ``current`` (the default): the transfer is refused, the agent holding the conversation
  is told why and answers (admission.py);
- an agent (a supervisor, or its name): it takes the conversation at once and answers;
  transfers are over for the turn, so it cannot pass the user on again;
- ``human``: the turn ends in state ``input-required`` with ``ESCALATION_MESSAGE``, for a
  person to take it from there; the session stays with the agent that held it.

Either of the last two records an ``escalated`` event with the reason and the path of
agents. Other refusals (a transfer to the agent itself, a second transfer in one
response, a target a remote agent may not name) never escalate.

A turn that fails outright (an error, a cancellation) ends with a ``run_failed`` event
whose text ``describe_failure`` writes.
"""

from __future__ import annotations

import anyio

from gateway.swarm.member import SwarmMember

CURRENT = "current"
HUMAN = "human"
ESCALATING_CAUSES = frozenset({"max_handoffs_per_turn", "cycle"})
ESCALATION_MESSAGE = "I am handing this conversation to a person on our team, who will answer you here."

Fallback = SwarmMember | str
"""``current``, ``human``, a supervisor agent, or a supervisor's name."""

_ANYIO_CANCEL_MESSAGE = "Cancelled via cancel scope "
_ANYIO_REASON_SEPARATOR = "; reason: "


def escalates(fallback: Fallback, cause: str) -> bool:
    """Whether a refusal for ``cause`` goes to the fallback rather than back to the current agent."""
    return cause in ESCALATING_CAUSES and fallback != CURRENT


def supervisor_name(fallback: Fallback) -> str | None:
    """The supervisor's name; None for ``current`` and ``human``."""
    if isinstance(fallback, str):
        return None if fallback in (CURRENT, HUMAN) else fallback
    return fallback.name


def describe_failure(exc: BaseException) -> str:
    """What a ``run_failed`` event says: the error, or "cancelled" plus the canceller's reason."""
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        reason = cancel_reason(exc)
        return f"cancelled: {reason}" if reason else "cancelled"
    return str(exc) or type(exc).__name__


def cancel_reason(exc: BaseException) -> str | None:
    """The ``reason`` given to ``CancelScope.cancel(reason)`` (anyio >= 4.10), when it can be read.

    anyio offers no public accessor: it writes the reason into the cancellation's message as
    ``"Cancelled via cancel scope <id> by <task>; reason: <reason>"``. The run's cancel
    scope belongs to whoever runs the turn (the gateway service cancels its runs with
    "the gateway is shutting down"), so the message is the only channel that reaches the
    runner. This is the one place that reads that text; any other format gives None (the
    event then says just "cancelled"), and tests/gateway/swarm/test_robustness.py pins the format.
    """
    message = str(exc)
    if not message.startswith(_ANYIO_CANCEL_MESSAGE):
        return None
    _, separator, reason = message.partition(_ANYIO_REASON_SEPARATOR)
    return reason or None if separator else None
