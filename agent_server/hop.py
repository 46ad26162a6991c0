"""What is left of a task's deadline and budget while its handler runs, for the agent calls the handler makes.

The agent server makes the task's account (``HopAccount``) the current one for the handler's
duration (``HopAccount.held``; a context variable, so a handler never passes it on by hand).
A ``Gateway`` used inside the handler reads it (``current_account``): its calls get no later
deadline and no more budget than what is left, and each cost they report is spent from it.

What the handler's calls spent is reported up once, by the server: it is added to the cost of
the next line the task sends (and to the task's total). So an agent's own chunks report its
own cost only; an agent that added its calls' cost to its chunks would have it counted twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from protocol.hop_limits import HopLimits

_CURRENT: ContextVar[HopAccount | None] = ContextVar("switchboard_hop_account", default=None)


def current_account() -> HopAccount | None:
    """The account of the task whose handler runs here (its limits may be none); None outside a handler."""
    return _CURRENT.get()


class HopAccount:
    """A task's limits as its caller sent them, and what the handler's agent calls have spent of the budget."""

    __slots__ = ("_reported_usd", "limits", "spent_usd")

    def __init__(self, limits: HopLimits) -> None:
        self.limits = limits
        self.spent_usd = 0.0
        self._reported_usd = 0.0

    def left(self) -> HopLimits:
        """The deadline, and the budget less what was spent (never below 0)."""
        budget = self.limits.budget_usd
        return HopLimits(self.limits.deadline_ms, None if budget is None else max(budget - self.spent_usd, 0.0))

    def spend(self, cost_usd: float) -> None:
        self.spent_usd += cost_usd

    def unreported(self) -> float:
        """What was spent since the last time this was asked: the cost the next line sent up carries."""
        cost = self.spent_usd - self._reported_usd
        self._reported_usd = self.spent_usd
        return cost

    @contextmanager
    def held(self) -> Iterator[None]:
        """This account is ``current_account()`` for the block: the handler's duration."""
        reset = _CURRENT.set(self)
        try:
            yield
        finally:
            _CURRENT.reset(reset)
