"""A run's cancel asked on one replica and carried out by the replica that writes the run.

A run is cancelled where it runs: its cancel scope is in that process. A replica that is
asked to cancel a run it does not hold leaves a ``CancelRequest`` in the shared log; the
run's writer finds it within ``CANCEL_POLL_S`` and cancels the run through its own cancel,
so ``run_cancelled`` is written by the process that writes the run. A log of one process
holds every run of its own, so it never stores a request (``CancelAsk.UNSHARED``).
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

import orjson

CancelCause = Literal["api", "disconnect"]
"""Why a run is cancelled: its owner (or an admin) asked, or its streaming client left and had asked for it."""

CANCEL_POLL_S = 0.2
"""How often a replica looks for cancels asked of the runs it writes: the most a cancel waits to be seen."""


@dataclass(frozen=True)
class CancelRequest:
    """Who asked to cancel a run, in words for a person, and how: what ``run_cancelled`` will say."""

    by: str | None
    reason: str
    cause: CancelCause

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def from_json(cls, body: bytes) -> CancelRequest:
        data: dict[str, Any] = orjson.loads(body)
        cause: CancelCause = "disconnect" if data.get("cause") == "disconnect" else "api"
        return cls(data.get("by"), str(data.get("reason") or "asked through the API"), cause)


class CancelAsk(enum.Enum):
    """What became of a cancel asked of a run this process does not hold."""

    STORED = "stored"
    """Left for the run's writer, which cancels the run when it next looks."""
    ENDED = "ended"
    """The run is closed: there is nothing to cancel."""
    UNSHARED = "unshared"
    """The log is this process's alone: no other process writes the run, so no request is stored."""


TakeCancel = Callable[[str, CancelRequest], Awaitable[bool]]
"""Cancels a run this process writes, as a request asks; False while the run is not cancellable here yet (it is
starting, or being taken over), so the request is kept and tried again."""
