"""Where a run's events go: a RunRecorder appends them to an event log under one run id.

The recorder of the run in progress travels in a context variable, so that an agent tool
called by a model inside a swarm run records into that run without being passed along. A
recorder made with ``keep=True`` (a swarm turn's) also keeps what it appended, whoever
emitted it, for the turn to hand out (``drain``) and to return (``events``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from .events import Event, EventType

if TYPE_CHECKING:
    from .event_log import EventLog


logger = logging.getLogger("gateway.events")

# Steps worth a line in the log at INFO; the rest (progress, text deltas...) go to DEBUG.
_INFO_EVENTS = frozenset(
    {
        EventType.AGENT_TOOL_INVOKED,
        EventType.AGENT_TOOL_COMPLETED,
        EventType.RUN_STARTED,
        EventType.RUN_COMPLETED,
        EventType.HANDOFF,
    }
)
_WARNING_EVENTS = frozenset(
    {
        EventType.AGENT_TOOL_TERMINATED,
        EventType.AGENT_TOOL_ERROR,
        EventType.RUN_FAILED,
        EventType.HANDOFF_REFUSED,
        EventType.CYCLE_DETECTED,
        EventType.LIMIT_REACHED,
    }
)
_LOGGED_FIELDS = (
    "tool",
    "agent",
    "mode",
    "session_id",
    "source",
    "target",
    "reason",
    "kind",
    "message",
    "error",
    "state",
    "cancel_acknowledged",
    "accumulated_cost_usd",
    "chunks",
    "active_agent_name",
    "duration_ms",
)


def new_run_id() -> str:
    return "run_" + uuid.uuid4().hex[:16]


class RunRecorder:
    def __init__(self, log: EventLog, run_id: str | None = None, *, keep: bool = False) -> None:
        self.log = log
        self.run_id = run_id or new_run_id()
        self.events: list[Event] | None = [] if keep else None
        self._handed_out = 0

    async def emit(self, type: EventType | str, **fields: Any) -> Event:
        """Append one event now; returns it with its seq. Lifecycle steps are also logged."""
        event = await self.log.append(Event.create(type, self.run_id, **fields))
        if self.events is not None:
            self.events.append(event)
        _log(event)
        return event

    def drain(self) -> list[Event]:
        """The kept events not handed out yet."""
        if self.events is None:
            return []
        fresh = self.events[self._handed_out :]
        self._handed_out = len(self.events)
        return fresh

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


def _shown(value: object) -> object:
    """Floats rounded for a person (0.0045, not 0.0045000000000000005); the event itself keeps full precision."""
    return round(value, 10) if isinstance(value, float) else value


def _log(event: Event) -> None:
    level = (
        logging.WARNING
        if event.type in _WARNING_EVENTS
        else logging.INFO
        if event.type in _INFO_EVENTS
        else logging.DEBUG
    )
    if not logger.isEnabledFor(level):
        return
    fields = event.fields
    details = " ".join(f"{key}={_shown(fields[key])!r}" for key in _LOGGED_FIELDS if fields.get(key) is not None)
    logger.log(level, "run=%s seq=%d %s %s", event.run_id, event.seq, event.type, details)
