"""An in-process task store, bounded in size, where tasks that are not running expire."""

from __future__ import annotations

import bisect
import itertools
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from agent_server.stores.base import RUNNING_STATES, StoreFull, TaskFilter, TaskPage, TaskStore
from agent_server.stores.cursors import before, decode_cursor, encode_cursor
from protocol import StreamEvent, Task, TaskState, parse_stream_event


@dataclass
class _Entry:
    """A task's snapshot and its events, each kept as its JSON (the events beside their seqs).

    Bytes are not tracked by Python's cyclic garbage collector, models are: a store holding
    thousands of tasks as models made every full collection walk all of them. What the
    store decides by (state, session, status time) is kept beside the JSON.
    """

    owner: str | None
    body: bytes = b""
    state: TaskState = TaskState.SUBMITTED
    session_id: str | None = None
    status_at: str = ""
    updated_at: float = 0.0
    seqs: list[int] = field(default_factory=list)
    events: list[bytes] = field(default_factory=list)
    push: dict[str, bytes] = field(default_factory=dict)

    def hold(self, task: Task, now: float) -> None:
        self.body = task.to_json()
        self.state, self.session_id, self.status_at = task.status.state, task.session_id, task.status.timestamp
        self.updated_at = now

    @property
    def task(self) -> Task:
        """A new copy of the snapshot."""
        return Task.model_validate_json(self.body)

    @property
    def running(self) -> bool:
        return self.state in RUNNING_STATES


class MemoryTaskStore(TaskStore):
    """Keeps at most ``max_tasks`` tasks; one not running expires ``ttl_s`` after its last update.

    When a new task would exceed the bound, the least recently updated tasks that are not
    running are evicted first; running tasks are never evicted, and if all ``max_tasks``
    are running, ``save_task`` raises ``StoreFull``. Task snapshots are copied in and out, so
    callers may mutate what they hold: both are kept as their JSON (an event's is the one
    the stream writes) and read back as new models.
    """

    def __init__(
        self, max_tasks: int = 10_000, ttl_s: float = 3600.0, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_tasks < 1:
            raise ValueError("max_tasks must be at least 1")
        self.max_tasks = max_tasks
        self.ttl_s = ttl_s
        self._clock = clock
        self._entries: dict[str, _Entry] = {}
        self._idle: OrderedDict[str, None] = OrderedDict()
        """The tasks not running, least recently updated first: those that expire or are evicted first.
        Running tasks stay out of it, so however many run, a sweep looks only at what it may drop."""

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
            entry = self._entries[task.id] = _Entry(owner)
        entry.hold(task, now)
        if entry.running:
            self._idle.pop(task.id, None)
        else:
            self._idle[task.id] = None
            self._idle.move_to_end(task.id)

    async def load_task(self, task_id: str) -> Task | None:
        entry = self._live_entry(task_id)
        return entry.task if entry else None

    async def owner_of(self, task_id: str) -> str | None:
        entry = self._live_entry(task_id)
        return entry.owner if entry else None

    async def append_event(self, task_id: str, event: StreamEvent) -> None:
        entry = self._entries.get(task_id)
        if entry is None:
            raise KeyError(f"no task {task_id!r} in the store; save it before appending events")
        entry.seqs.append(event.seq)
        entry.events.append(event.encoded)

    async def read_events(self, task_id: str, after_seq: int = -1) -> list[StreamEvent]:
        entry = self._live_entry(task_id)
        if entry is None:
            return []
        start = bisect.bisect_right(entry.seqs, after_seq)
        return [parse_stream_event(orjson.loads(body)) for body in entry.events[start:]]

    async def last_seq(self, task_id: str) -> int:
        entry = self._live_entry(task_id)
        return entry.seqs[-1] if entry is not None and entry.seqs else -1

    async def list_tasks(self, where: TaskFilter, *, limit: int, cursor: str = "") -> TaskPage:
        after = decode_cursor(cursor) if cursor else None
        self._expire(self._clock())
        places = sorted(
            (
                (entry.updated_at, task_id)
                for task_id, entry in self._entries.items()
                if where.admits(entry.owner, entry.session_id, entry.state, entry.status_at)
            ),
            reverse=True,
        )
        rest = [place for place in places if before(place, after)]
        page = rest[:limit]
        tasks = [self._entries[task_id].task for _, task_id in page]
        next_cursor = encode_cursor(*page[-1]) if len(rest) > limit else ""
        return TaskPage(tasks=tasks, next_cursor=next_cursor, total=len(places))

    async def save_push_config(self, task_id: str, config_id: str, body: bytes) -> None:
        entry = self._live_entry(task_id)
        if entry is None:
            raise KeyError(f"no task {task_id!r} in the store; save it before its push configs")
        entry.push[config_id] = body

    async def push_configs(self, task_id: str) -> dict[str, bytes]:
        entry = self._live_entry(task_id)
        return dict(entry.push) if entry is not None else {}

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        entry = self._live_entry(task_id)
        if entry is not None:
            entry.push.pop(config_id, None)

    async def delete_task(self, task_id: str) -> None:
        self._entries.pop(task_id, None)
        self._idle.pop(task_id, None)

    async def expire(self) -> int:
        return self._expire(self._clock())

    def _live_entry(self, task_id: str) -> _Entry | None:
        entry = self._entries.get(task_id)
        if entry is not None and self._expired(entry, self._clock()):
            self._forget(task_id)
            return None
        return entry

    def _expired(self, entry: _Entry, now: float) -> bool:
        return not entry.running and now - entry.updated_at > self.ttl_s

    def _expire(self, now: float) -> int:
        """The idle tasks are in update order, so the scan stops at the first fresh one."""
        doomed: list[str] = []
        for task_id in self._idle:
            if not self._expired(self._entries[task_id], now):
                break
            doomed.append(task_id)
        for task_id in doomed:
            self._forget(task_id)
        return len(doomed)

    def _forget(self, task_id: str) -> None:
        del self._entries[task_id]
        self._idle.pop(task_id, None)

    def _make_room(self) -> None:
        excess = len(self._entries) + 1 - self.max_tasks
        if excess <= 0:
            return
        if len(self._idle) < excess:
            raise StoreFull(f"all {self.max_tasks} task slots hold running tasks")
        for task_id in list(itertools.islice(self._idle, excess)):
            self._forget(task_id)
