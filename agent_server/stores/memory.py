"""An in-process task store, bounded in size, where tasks that are not running expire."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from protocol import StreamEvent, Task

from .base import StoreFull, TaskStore, is_running


@dataclass
class _Entry:
    task: Task
    updated_at: float
    owner: str | None = None
    events: list[StreamEvent] = field(default_factory=list)


class MemoryTaskStore(TaskStore):
    """Keeps at most ``max_tasks`` tasks; one not running expires ``ttl_s`` after its last update.

    When a new task would exceed the bound, the least recently updated tasks that are not
    running are evicted first; running tasks are never evicted, and if all ``max_tasks``
    are running, ``save_task`` raises ``StoreFull``. Task snapshots are copied in and out, so
    callers may mutate what they hold; events are kept and handed out as they were given,
    since nobody changes an event once it is appended (base.py).
    """

    def __init__(
        self, max_tasks: int = 10_000, ttl_s: float = 3600.0, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_tasks < 1:
            raise ValueError("max_tasks must be at least 1")
        self.max_tasks = max_tasks
        self.ttl_s = ttl_s
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    @property
    def task_count(self) -> int:
        """How many tasks the store holds (expired ones included until they are swept)."""
        return len(self._entries)

    async def save_task(self, task: Task, owner: str | None = None) -> None:
        now = self._clock()
        entry = self._entries.get(task.id)
        if entry is None:
            self._expire(now)
            self._make_room()
            self._entries[task.id] = _Entry(task=task.model_copy(deep=True), updated_at=now, owner=owner)
            return
        entry.task = task.model_copy(deep=True)
        entry.updated_at = now
        self._entries.move_to_end(task.id)

    async def load_task(self, task_id: str) -> Task | None:
        entry = self._live_entry(task_id)
        return entry.task.model_copy(deep=True) if entry else None

    async def owner_of(self, task_id: str) -> str | None:
        entry = self._live_entry(task_id)
        return entry.owner if entry else None

    async def append_event(self, task_id: str, event: StreamEvent) -> None:
        entry = self._entries.get(task_id)
        if entry is None:
            raise KeyError(f"no task {task_id!r} in the store; save it before appending events")
        entry.events.append(event)

    async def read_events(self, task_id: str, after_seq: int = -1) -> list[StreamEvent]:
        entry = self._live_entry(task_id)
        if entry is None:
            return []
        return [e for e in entry.events if e.seq > after_seq]

    async def last_seq(self, task_id: str) -> int:
        entry = self._live_entry(task_id)
        return entry.events[-1].seq if entry is not None and entry.events else -1

    async def delete_task(self, task_id: str) -> None:
        self._entries.pop(task_id, None)

    async def expire(self) -> int:
        return self._expire(self._clock())

    def _live_entry(self, task_id: str) -> _Entry | None:
        entry = self._entries.get(task_id)
        if entry is not None and self._expired(entry, self._clock()):
            del self._entries[task_id]
            return None
        return entry

    def _expired(self, entry: _Entry, now: float) -> bool:
        return not is_running(entry.task) and now - entry.updated_at > self.ttl_s

    def _expire(self, now: float) -> int:
        """Entries are in update order, so the scan stops at the first fresh idle one."""
        doomed: list[str] = []
        for task_id, entry in self._entries.items():
            if is_running(entry.task):
                continue
            if not self._expired(entry, now):
                break
            doomed.append(task_id)
        for task_id in doomed:
            del self._entries[task_id]
        return len(doomed)

    def _make_room(self) -> None:
        excess = len(self._entries) + 1 - self.max_tasks
        if excess <= 0:
            return
        victims: list[str] = []
        for task_id, entry in self._entries.items():
            if len(victims) == excess:
                break
            if not is_running(entry.task):
                victims.append(task_id)
        if len(victims) < excess:
            raise StoreFull(f"all {self.max_tasks} task slots hold running tasks")
        for task_id in victims:
            del self._entries[task_id]
