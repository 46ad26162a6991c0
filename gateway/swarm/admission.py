"""Whether a transfer may happen now: the rules of one turn, as a pure function of where it stands.

A transfer is refused when the target already holds the conversation, when transfers are
over for the turn (an earlier one was refused), past ``max_handoffs_per_turn``, or when
it would repeat a cycle of two or more agents (A -> B -> A -> B) even below the limit.
A refused transfer ends transfers for the turn; the agent is told why and answers.
"""

from __future__ import annotations

from dataclasses import dataclass

HANDOFF_LIMIT_MESSAGE = "Maximum agent transfers exceeded for a single turn."
ANSWER_NOW = "Answer the user now, without calling tools or transferring."


@dataclass(frozen=True)
class Refusal:
    """Why a transfer was refused: the ``cause`` recorded, the ``message`` the agent reads, the ``cycle`` if one."""

    cause: str
    message: str
    cycle: list[str] | None = None


def refusal(
    source: str, target: str, *, path: list[str], transfers_blocked: bool, max_handoffs_per_turn: int
) -> Refusal | None:
    """None when ``source`` may hand the conversation to ``target`` now; ``path`` is the turn's agents so far."""
    if target == source:
        return Refusal("self", f"{source!r} already holds the conversation; no transfer needed.")
    if transfers_blocked:
        return Refusal("transfers_blocked", f"Transfers are over for this turn. {ANSWER_NOW}")
    if len(path) - 1 >= max_handoffs_per_turn:
        return Refusal("max_handoffs_per_turn", HANDOFF_LIMIT_MESSAGE)
    cycle = repeated_cycle([*path, target])
    if cycle is not None:
        loop = " -> ".join(cycle)
        message = f"Transfer to {target!r} refused: the conversation goes in circles ({loop}). {ANSWER_NOW}"
        return Refusal("cycle", message, cycle)
    return None


def repeated_cycle(path: list[str]) -> list[str] | None:
    """The tail of ``path`` when it repeats a cycle of two or more agents (A B A B), else None."""
    for size in range(2, len(path) // 2 + 1):
        if path[-size:] == path[-2 * size : -size]:
            return path[-2 * size :]
    return None
