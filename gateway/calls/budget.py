"""The spending limit of an agent-tool call, checked on every chunk before it is passed on."""

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

    def exceeded_by(self, cost_usd: float) -> bool:
        """Strictly above the limit; the tolerance keeps float sums like 5 x 0.001 from tripping a 0.005 budget."""
        return self.max_cost_usd is not None and cost_usd > self.max_cost_usd + _TOLERANCE_USD
