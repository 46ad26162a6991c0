"""The task store interface: tasks and their stream events, nothing else.

A store keeps the latest snapshot of each task, the task's events in seq order, and the
name of the caller that created it (its owner, None on a server without tokens). It
never decides anything about task life; "running" means state ``submitted`` or
``working``, and a store never evicts or expires such a task.
"""

from __future__ import annotations

import abc

from protocol import StreamEvent, SwitchboardError, Task, TaskState

RUNNING_STATES = frozenset({TaskState.SUBMITTED, TaskState.WORKING})


class StoreFull(SwitchboardError):
    """Raised by ``save_task`` for a new task when the store is full of running tasks."""


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
    async def delete_task(self, task_id: str) -> None:
        """Forget a task and its events; unknown ids are ignored."""

    @abc.abstractmethod
    async def expire(self) -> int:
        """Drop tasks that are not running and were not updated within the TTL; returns how many."""

    async def aclose(self) -> None:
        """Release what the store holds (connections, files)."""


def is_running(task: Task) -> bool:
    return task.status.state in RUNNING_STATES
