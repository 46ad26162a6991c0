"""What a task's handler run records: a span around the agent's handler and the running-tasks gauge."""

from __future__ import annotations

from contextlib import AbstractContextManager
from types import TracebackType

from agent_server.telemetry import metrics, tracing


class handler_span:
    """Around one run of the agent's handler; a child of the request that started the task.

    A class, not a generator: entered once per send, whose whole cost counts.
    """

    def __init__(self, agent: str, task_id: str, session_id: str | None) -> None:
        self._agent = agent
        self._span: AbstractContextManager[object] | None = None
        if tracing.enabled():
            attributes = {"switchboard.agent": agent, "a2a.task_id": task_id}
            if session_id:
                attributes["a2a.session_id"] = session_id
            self._span = tracing.span(f"handle {agent}", attributes)

    def __enter__(self) -> None:
        metrics.task_running(self._agent, 1)
        if self._span is not None:
            self._span.__enter__()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        try:
            if self._span is not None:
                self._span.__exit__(kind, error, trace)
        finally:
            metrics.task_running(self._agent, -1)
