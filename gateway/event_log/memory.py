"""The in-memory event log: a list per run. For tests and single-process gateways."""

from __future__ import annotations

import itertools

from gateway.event_log.base import EventLog
from gateway.recording.events import Event


class MemoryEventLog(EventLog):
    def __init__(self) -> None:
        super().__init__()
        self._runs: dict[str, list[Event]] = {}
        self._owners: dict[str, str] = {}
        self._closed: set[str] = set()

    async def append(self, event: Event) -> Event:
        events = self._runs.setdefault(event.run_id, [])
        stored = event.with_seq(len(events))
        events.append(stored)
        self._notify(event.run_id)
        return stored

    async def read(self, run_id: str, after_seq: int = -1, limit: int | None = None) -> list[Event]:
        events = self._runs.get(run_id, [])
        start = max(after_seq + 1, 0)
        end = len(events) if limit is None else min(len(events), start + limit)
        return events[start:end]

    async def close_run(self, run_id: str) -> None:
        self._closed.add(run_id)
        self._notify(run_id)

    async def is_closed(self, run_id: str) -> bool:
        return run_id in self._closed

    async def close_abandoned_runs(self) -> list[str]:
        """Nothing to do: a memory log never outlives the process that wrote it."""
        return []

    async def open_run(self, run_id: str, *, owner: str | None = None) -> None:
        self._runs.setdefault(run_id, [])
        if owner is not None:
            self._owners.setdefault(run_id, owner)

    async def run_owner(self, run_id: str) -> str | None:
        return self._owners.get(run_id)

    async def list_runs(self, limit: int = 100, *, owner: str | None = None) -> list[str]:
        runs = (run_id for run_id in reversed(self._runs) if owner is None or self._owners.get(run_id) == owner)
        return list(itertools.islice(runs, limit))
