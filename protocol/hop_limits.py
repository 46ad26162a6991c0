"""The deadline and the budget a call carries to the agent it calls, as an A2A extension.

An agent that calls other agents spends its caller's time and money: whatever it is asked
to do must end by its caller's deadline and cost no more than what is left of its caller's
budget. So every remote call says both, and each hop passes on no later deadline and no more
budget than it was given.

On the wire (every binding: the NDJSON binding's ``TaskSendParams.metadata``, the standard
bindings' ``SendMessageRequest.metadata``), under the extension's URI::

    "metadata": {"urn:switchboard:a2a:hop-limits:v1": {"deadlineMs": 1767225600000, "budgetUsd": 0.042}}

- ``deadlineMs``: an absolute time, milliseconds since the Unix epoch (UTC), by which the
  caller stops waiting; an integer.
- ``budgetUsd``: what the caller allows the task to cost, sub-calls included, in US dollars;
  a number >= 0.

Either may be left out (no limit of that kind). The card declares the extension in
``capabilities.extensions``; a caller that uses it names the URI in the ``A2A-Extensions``
header. A receiver reads the metadata whether or not the header came, and refuses a value of
the wrong type (invalid params) rather than guess.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

HOP_LIMITS_EXTENSION = "urn:switchboard:a2a:hop-limits:v1"
"""The extension's URI: the card's ``capabilities.extensions``, the ``A2A-Extensions`` header, the metadata key."""
HOP_LIMITS_DESCRIPTION = (
    "A request's metadata may carry the caller's deadline (deadlineMs, epoch ms) and remaining budget "
    "(budgetUsd, US dollars); the agent's own calls to other agents stay within them."
)
"""What the card says of the extension."""
EXTENSIONS_HEADER = "A2A-Extensions"
DEADLINE_KEY = "deadlineMs"
BUDGET_KEY = "budgetUsd"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class HopLimits:
    """A call's deadline (epoch ms) and budget (USD); None: no limit of that kind."""

    deadline_ms: int | None = None
    budget_usd: float | None = None

    @classmethod
    def of_metadata(cls, metadata: Mapping[str, Any] | None) -> HopLimits:
        """The limits a request's metadata carries; ValueError, saying which value is wrong, for a bad one."""
        value = (metadata or {}).get(HOP_LIMITS_EXTENSION)
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise ValueError(f"metadata {HOP_LIMITS_EXTENSION!r} must be an object with {DEADLINE_KEY}, {BUDGET_KEY}")
        deadline = value.get(DEADLINE_KEY)
        budget = value.get(BUDGET_KEY)
        if deadline is not None and not _is_number(deadline):
            raise ValueError(f"{DEADLINE_KEY} must be milliseconds since the Unix epoch, got {deadline!r}")
        if budget is not None and (not _is_number(budget) or budget < 0):
            raise ValueError(f"{BUDGET_KEY} must be a number of US dollars >= 0, got {budget!r}")
        return cls(
            deadline_ms=None if deadline is None else int(deadline),
            budget_usd=None if budget is None else float(budget),
        )

    def to_metadata(self) -> dict[str, Any] | None:
        """The extension's entry of a request's metadata; None when there is no limit to send."""
        value: dict[str, Any] = {}
        if self.deadline_ms is not None:
            value[DEADLINE_KEY] = self.deadline_ms
        if self.budget_usd is not None:
            value[BUDGET_KEY] = self.budget_usd
        return {HOP_LIMITS_EXTENSION: value} if value else None

    def within(self, other: HopLimits) -> HopLimits:
        """The tighter of both limits, each kind on its own."""
        return HopLimits(_least(self.deadline_ms, other.deadline_ms), _least(self.budget_usd, other.budget_usd))

    def seconds_left(self) -> float | None:
        """Until the deadline, from now (0 once it passed); None without one."""
        if self.deadline_ms is None:
            return None
        return max(self.deadline_ms - now_ms(), 0) / 1000


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


_N = TypeVar("_N", int, float)


def _least(one: _N | None, other: _N | None) -> _N | None:
    if one is None:
        return other
    if other is None:
        return one
    return min(one, other)
