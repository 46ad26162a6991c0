"""How long the event log keeps a closed run, and the log's own pruning of those past it.

Without it the log only grew: every run of every session, kept forever. A ``Retention``
bounds it by age (a run closed longer ago than ``max_age_s``) and by count (past the
newest ``max_runs`` runs); a run still open is never pruned, whatever its age. The log
prunes itself while a gateway runs it (``EventLog.running``): once at start, then every
``every_s``, at most ``batch`` runs per step, so one prune never holds the store long.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

logger = logging.getLogger("gateway.events")

DAY_S = 86_400.0


@dataclass(frozen=True)
class Retention:
    """What the log keeps of closed runs; None keeps them whatever their age, or count."""

    max_age_s: float | None = None
    max_runs: int | None = None
    every_s: float = 3600.0
    batch: int = 500

    def __post_init__(self) -> None:
        if self.max_age_s is not None and not self.max_age_s > 0:
            raise ValueError(f"Retention.max_age_s must be positive seconds or None, got {self.max_age_s!r}")
        if self.max_runs is not None and self.max_runs < 1:
            raise ValueError(f"Retention.max_runs must be at least 1 or None, got {self.max_runs!r}")
        if not self.every_s > 0 or self.batch < 1:
            raise ValueError("Retention.every_s must be positive and Retention.batch at least 1")

    @classmethod
    def configured(cls, days: float, max_runs: int) -> Retention:
        """From the configuration's ``events_retention_days`` and ``events_max_runs``, 0 meaning no bound."""
        return cls(max_age_s=days * DAY_S if days > 0 else None, max_runs=max_runs or None)

    @property
    def keeps_all(self) -> bool:
        return self.max_age_s is None and self.max_runs is None

    def closed_before_ms(self, now_ms: int) -> int | None:
        """Runs closed before this time (ms) are past the age bound; None when there is none."""
        return None if self.max_age_s is None else now_ms - int(self.max_age_s * 1000)
