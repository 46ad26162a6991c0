"""The in-memory event log: a list per run. For tests and single-process gateways."""

from __future__ import annotations

import itertools

from gateway.event_log.base import EventLog
from gateway.event_log.retention import Retention
from gateway.recording.events import Event, now_ms


class MemoryEventLog(EventLog):
    def __init__(self, *, retention: Retention | None = None) -> None:
        super().__init__(retention)
        self._runs: dict[str, list[Event]] = {}  # in the order they were opened
        self._owners: dict[str, str] = {}
        self._closed: dict[str, int] = {}  # run -> when it was closed (ms)

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
        self._closed.setdefault(run_id, now_ms())
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

    async def prune(self) -> list[str]:
        closed_before = self.retention.closed_before_ms(now_ms())
        max_runs = self.retention.max_runs
        beyond = len(self._runs) - max_runs if max_runs is not None else 0  # the oldest runs past the newest max_runs
        pruned: list[str] = []
        for position, run_id in enumerate(list(self._runs)):
            closed_at = self._closed.get(run_id)
            if len(pruned) == self.retention.batch:
                break
            too_old = closed_before is not None and closed_at is not None and closed_at < closed_before
            if closed_at is None or not (position < beyond or too_old):
                continue
            pruned.append(run_id)
            del self._runs[run_id], self._closed[run_id]
            self._owners.pop(run_id, None)
        return pruned
