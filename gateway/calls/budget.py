"""The spending limit of an agent-tool call, checked on every chunk before it is passed on.

Inside an agent's handler, a call's budget is also no more than what is left of the budget
the agent's own caller sent (agent_server/hop.py), and what is left of the call's is sent on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_TOLERANCE_USD = 1e-9


@dataclass(frozen=True)
class Budget:
    """``max_cost_usd`` None means no limit; a call fails once its accumulated cost goes above it."""

    max_cost_usd: float | None = None

    @classmethod
    def parse(cls, value: Budget | Mapping[str, Any] | None) -> Budget:
        if value is None:
            return cls()
        if isinstance(value, Budget):
            return value
        unknown = set(value) - {"max_cost_usd"}
        if unknown:
            raise ValueError(f"unknown budget option(s) {sorted(unknown)}; the budget takes max_cost_usd")
        limit = value.get("max_cost_usd")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int | float) or limit < 0):
            raise ValueError(f"budget max_cost_usd must be a number >= 0 or None, got {limit!r}")
        return cls(max_cost_usd=None if limit is None else float(limit))

    def within(self, limit_usd: float | None) -> Budget:
        """This budget, lowered to ``limit_usd`` (what is left of the caller's) when that is less."""
        if limit_usd is None or (self.max_cost_usd is not None and self.max_cost_usd <= limit_usd):
            return self
        return Budget(max_cost_usd=limit_usd)

    def left_after(self, cost_usd: float) -> float | None:
        """What is left once ``cost_usd`` is spent (never below 0); None without a limit."""
        return None if self.max_cost_usd is None else max(self.max_cost_usd - cost_usd, 0.0)

    def exceeded_by(self, cost_usd: float) -> bool:
        """Strictly above the limit; the tolerance keeps float sums like 5 x 0.001 from tripping a 0.005 budget."""
        return self.max_cost_usd is not None and cost_usd > self.max_cost_usd + _TOLERANCE_USD
