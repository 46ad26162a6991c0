"""Where a run's events go: a RunRecorder appends them to an event log under one run id.

The recorder of the run in progress travels in a context variable, so that an agent tool
called by a model inside a swarm run records into that run without being passed along.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from .events import Event, EventType

if TYPE_CHECKING:
    from .event_log import EventLog


def new_run_id() -> str:
    return "run_" + uuid.uuid4().hex[:16]


class RunRecorder:
    def __init__(self, log: EventLog, run_id: str | None = None) -> None:
        self.log = log
        self.run_id = run_id or new_run_id()

    async def emit(self, type: EventType | str, **fields: Any) -> Event:
        """Append one event now; returns it with its seq."""
        return await self.log.append(Event.create(type, self.run_id, **fields))

    @contextmanager
    def active(self) -> Iterator[RunRecorder]:
        """Make this the current run's recorder for the code inside the block."""
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)


_current: ContextVar[RunRecorder | None] = ContextVar("switchboard_run_recorder", default=None)


def current_recorder() -> RunRecorder | None:
    return _current.get()
