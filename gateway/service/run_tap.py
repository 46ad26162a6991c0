"""Learning a swarm run's id the moment it starts, without waiting for its first streamed event.

The Runner mints the run id inside its turn. The service hands it an event log wrapped in
``RunTap``: the first event appended from a task that called ``watch_first_append`` is
reported to that task's callback, so ``POST /sessions/{id}/messages`` can answer with the
run id (and start following the log) as soon as ``run_started`` is written.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar

from ..event_log import EventLog
from ..events import Event

_first_append: ContextVar[Callable[[str], None] | None] = ContextVar("switchboard_first_append", default=None)


def watch_first_append(callback: Callable[[str], None]) -> None:
    """In the current task, call ``callback(run_id)`` once, at the next append through a RunTap."""
    _first_append.set(callback)


class RunTap(EventLog):
    """Passes everything through to ``inner``; only notices the first append of a watching task."""

    def __init__(self, inner: EventLog) -> None:
        super().__init__()
        self.inner = inner

    async def append(self, event: Event) -> Event:
        stored = await self.inner.append(event)
        callback = _first_append.get()
        if callback is not None:
            _first_append.set(None)
            callback(stored.run_id)
        return stored

    async def read(self, run_id: str, after_seq: int = -1, limit: int | None = None) -> list[Event]:
        return await self.inner.read(run_id, after_seq, limit)

    async def close_run(self, run_id: str) -> None:
        await self.inner.close_run(run_id)

    async def is_closed(self, run_id: str) -> bool:
        return await self.inner.is_closed(run_id)

    async def list_runs(self, limit: int = 100) -> list[str]:
        return await self.inner.list_runs(limit)

    def follow(self, run_id: str, after_seq: int = -1) -> AsyncIterator[Event]:
        return self.inner.follow(run_id, after_seq)

    def as_ndjson(self, run_id: str, after_seq: int = -1, follow: bool = False) -> AsyncIterator[bytes]:
        return self.inner.as_ndjson(run_id, after_seq, follow)

    async def aclose(self) -> None:
        """The inner log belongs to whoever made it."""
