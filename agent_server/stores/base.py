"""The task store interface: tasks, their stream events and their push-notification configs.

A store keeps the latest snapshot of each task, the task's events in seq order, the
name of the caller that created it (its owner, None on a server without tokens), and the
task's webhook configs, each kept as the JSON it is handed under its id, gone with the task. An
event is never changed once appended: a store keeps its ``encoded`` JSON (made once, shared
with the streams that write it). It never decides anything about task life; "running"
means state ``submitted`` or ``working``, and a store never evicts or expires such a task.

A store shared by several server processes (Redis) also tells which running tasks
another live process runs, hands their events on as that process appends them, and
passes a cancel request to it (``running_elsewhere``, ``follow_events``,
``request_cancel``, while ``serving``). A store of one process has none of that: every
running task it holds without a run here was left by a process that stopped.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from protocol import ErrorCode, ProtocolError, StreamEvent, SwitchboardError, Task, TaskState

RUNNING_STATES = frozenset({TaskState.SUBMITTED, TaskState.WORKING})


class StoreFull(SwitchboardError):
    """Raised by ``save_task`` for a new task when the store is full of running tasks."""


class StoreUnavailable(ProtocolError):
    """A store cannot be reached (its server is down or restarting): the call failed, retry later (503)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INTERNAL_ERROR, message, http_status=503)


CancelRequested = Callable[[str], None]
"""Called with a task id when another process asks to cancel a task this one runs."""


@dataclass(frozen=True)
class TaskPage:
    """One page of ``list_tasks``: its tasks, the cursor of the next page ("" on the last) and how many match in all."""

    tasks: list[Task]
    next_cursor: str
    total: int


@dataclass(frozen=True)
class TaskFilter:
    """Which tasks ``list_tasks`` lists: ``owned_by`` that caller's only (None: everyone's), in ``session_id``,
    in ``state``, whose status changed at or after ``status_after`` (an ISO 8601 UTC time as ``utc_now_iso``
    writes it)."""

    owned_by: str | None = None
    session_id: str | None = None
    state: TaskState | None = None
    status_after: str | None = None

    def matches(self, task: Task, owner: str | None) -> bool:
        return self.admits(owner, task.session_id, task.status.state, task.status.timestamp)

    def admits(self, owner: str | None, session_id: str | None, state: TaskState, status_at: str) -> bool:
        """``matches`` for a task known by these fields only."""
        return (
            (self.owned_by is None or owner == self.owned_by)
            and (self.session_id is None or session_id == self.session_id)
            and (self.state is None or state is self.state)
            and (self.status_after is None or status_at >= self.status_after)
        )


class TaskStore(abc.ABC):
    """Where an agent server keeps tasks and their events. All methods are safe to call concurrently."""

    @abc.abstractmethod
    async def save_task(self, task: Task, owner: str | None = None) -> None:
        """Insert or replace the snapshot of ``task``; ``owner`` is recorded on insert and kept afterwards."""

    @abc.abstractmethod
    async def load_task(self, task_id: str) -> Task | None:
        """The latest snapshot, or None when unknown or expired."""

    @abc.abstractmethod
    async def owner_of(self, task_id: str) -> str | None:
        """Who created the task (None when unknown, or created without an owner)."""

    @abc.abstractmethod
    async def append_event(self, task_id: str, event: StreamEvent) -> None:
        """Store one event; the caller hands events over in seq order."""

    @abc.abstractmethod
    async def read_events(self, task_id: str, after_seq: int = -1) -> list[StreamEvent]:
        """The stored events with ``seq > after_seq``, in seq order."""

    @abc.abstractmethod
    async def last_seq(self, task_id: str) -> int:
        """The seq of the task's newest stored event; -1 when it has none."""

    @abc.abstractmethod
    async def list_tasks(self, where: TaskFilter, *, limit: int, cursor: str = "") -> TaskPage:
        """The tasks ``where`` selects, most recently updated first, ``limit`` of them after ``cursor``.

        ``cursor`` is a previous page's ``next_cursor``; one this store did not make is a ValueError.
        """

    @abc.abstractmethod
    async def delete_task(self, task_id: str) -> None:
        """Forget a task and its events; unknown ids are ignored."""

    @abc.abstractmethod
    async def save_push_config(self, task_id: str, config_id: str, body: bytes) -> None:
        """Insert or replace one webhook config of a stored task."""

    @abc.abstractmethod
    async def push_configs(self, task_id: str) -> dict[str, bytes]:
        """The task's webhook configs by id (none for an unknown task)."""

    @abc.abstractmethod
    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        """Forget one webhook config; an unknown one is ignored."""

    @abc.abstractmethod
    async def expire(self) -> int:
        """Drop tasks that are not running and were not updated within the TTL; returns how many."""

    async def aclose(self) -> None:
        """Release what the store holds (connections, files)."""

    @asynccontextmanager
    async def serving(self, cancel: CancelRequested) -> AsyncIterator[None]:
        """Held by the TaskManager while it runs tasks; a shared store marks this process alive and hears cancels."""
        yield

    async def running_elsewhere(self, task_id: str) -> bool:
        """Whether another live process runs this running task (never, in a store of one process)."""
        return False

    async def follow_events(self, task_id: str, after_seq: int) -> AsyncGenerator[StreamEvent, None]:
        """Events another process appends after ``after_seq``, as they come, through the final one."""
        for event in await self.read_events(task_id, after_seq):
            yield event

    async def request_cancel(self, task_id: str) -> bool:
        """Ask the process that runs the task to cancel it; False when none will hear it."""
        return False


def is_running(task: Task) -> bool:
    return task.status.state in RUNNING_STATES
