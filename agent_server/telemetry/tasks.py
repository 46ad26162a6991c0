"""What a task's handler run records: a span around the agent's handler and the running-tasks gauge."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from . import metrics, tracing


@contextmanager
def handler_span(agent: str, task_id: str, session_id: str | None) -> Iterator[None]:
    """Around one run of the agent's handler; a child of the request that started the task."""
    attributes = {"switchboard.agent": agent, "a2a.task_id": task_id} if tracing.enabled() else None
    if attributes is not None and session_id:
        attributes["a2a.session_id"] = session_id
    running = metrics.labelled(metrics.TASKS_RUNNING, agent) if metrics.ENABLED else None
    if running is not None:
        running.inc()
    try:
        with tracing.span(f"handle {agent}", attributes):
            yield
    finally:
        if running is not None:
            running.dec()
