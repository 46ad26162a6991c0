"""Counters per fixed window: a key's count lives until its window ends, then starts again from zero.

Windows are aligned to the Unix epoch in UTC (a day resets at midnight UTC, a minute on the
minute), so every replica computes the same window, and its key, from the clock alone.
"""

from __future__ import annotations

import abc
import enum
import math
import time
from dataclasses import dataclass


class Window(enum.Enum):
    """How long a count lasts before it starts again; the value is its length in seconds."""

    MINUTE = 60
    HOUR = 3600
    DAY = 86400
    WEEK = 604800

    @property
    def word(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Period:
    """One window of counting: its index since the epoch (part of the key) and when it ends."""

    index: int
    ends_at: float

    @classmethod
    def now(cls, window: Window, clock: float | None = None) -> Period:
        at = time.time() if clock is None else clock
        index = int(at // window.value)
        return cls(index, float((index + 1) * window.value))

    def seconds_left(self, clock: float | None = None) -> int:
        """Whole seconds until the window ends (at least 1): what ``Retry-After`` says."""
        at = time.time() if clock is None else clock
        return max(1, math.ceil(self.ends_at - at))


class Counters(abc.ABC):
    """Where the counts are kept; a key expires when its window ends."""

    @abc.abstractmethod
    async def increment(self, key: str, expires_at: float) -> int:
        """Add one to ``key``; its count after."""

    @abc.abstractmethod
    async def add(self, key: str, amount: float, expires_at: float) -> float:
        """Add ``amount`` to ``key``; its total after."""

    @abc.abstractmethod
    async def read(self, key: str) -> float:
        """The total of ``key`` (0 when it has none or it expired)."""

    async def aclose(self) -> None:
        """Release what the counters hold (a connection)."""


class MemoryCounters(Counters):
    """The counts of one process: enough for a gateway without replicas."""

    def __init__(self) -> None:
        self._counts: dict[str, tuple[float, float]] = {}

    async def increment(self, key: str, expires_at: float) -> int:
        return int(await self.add(key, 1, expires_at))

    async def add(self, key: str, amount: float, expires_at: float) -> float:
        self._forget_expired()
        total = self._counts.get(key, (0.0, expires_at))[0] + amount
        self._counts[key] = (total, expires_at)
        return total

    async def read(self, key: str) -> float:
        self._forget_expired()
        return self._counts.get(key, (0.0, 0.0))[0]

    def _forget_expired(self) -> None:
        now = time.time()
        for key in [key for key, (_, expires_at) in self._counts.items() if expires_at <= now]:
            del self._counts[key]
