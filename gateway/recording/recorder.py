"""Where a run's events go: a RunRecorder appends them to an event log under one run id.

The recorder of the run in progress travels in a context variable, so that an agent tool
called by a model inside a swarm run records into that run without being passed along. A
recorder made with ``keep=True`` (a swarm turn's) also keeps what it appended, whoever
emitted it, for the turn to hand out (``drain``) and to return (``events``).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import aclosing, contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from agent_server.telemetry import tracing
from gateway.recording import spend
from gateway.recording.events import Event, EventType, RunStartedEvent
from gateway.recording.usage import RunUsage
from gateway.telemetry import metrics

if TYPE_CHECKING:
    from gateway.event_log import EventLog


logger = logging.getLogger("gateway.events")

# Steps worth a line in the log at INFO; the rest (progress, text deltas...) go to DEBUG.
_INFO_EVENTS = frozenset(
    {
        EventType.AGENT_TOOL_INVOKED,
        EventType.AGENT_TOOL_COMPLETED,
        EventType.RUN_STARTED,
        EventType.RUN_COMPLETED,
        EventType.RUN_RESUMED,
        EventType.HANDOFF,
        EventType.MODEL_CALL,
    }
)
_WARNING_EVENTS = frozenset(
    {
        EventType.AGENT_TOOL_TERMINATED,
        EventType.AGENT_TOOL_ERROR,
        EventType.RUN_FAILED,
        EventType.RUN_CANCELLED,
        EventType.HANDOFF_REFUSED,
        EventType.CYCLE_DETECTED,
        EventType.LIMIT_REACHED,
    }
)
_LEVELS = {kind.value: logging.INFO for kind in _INFO_EVENTS} | {
    kind.value: logging.WARNING for kind in _WARNING_EVENTS
}
"""Each event's log level, DEBUG for those not named."""
_TRACED_EVENTS = frozenset({EventType.RUN_STARTED, EventType.AGENT_TOOL_INVOKED})
"""The first event of a turn or of a tool call carries the trace id, when tracing is on."""
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
    "model",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
)


def new_run_id() -> str:
    return "run_" + uuid.uuid4().hex[:16]


class RunRecorder:
    def __init__(self, log: EventLog, run_id: str | None = None, *, keep: bool = False) -> None:
        self.log = log
        self.run_id = run_id or new_run_id()
        self.events: list[Event] | None = [] if keep else None
        self.usage = RunUsage()
        """Tokens and cost per agent so far (usage.py)."""
        self._metrics = metrics.RunMetrics()
        self._session_id: str | None = None
        self._handed_out = 0

    def event(self, type: EventType | str, **fields: Any) -> Event:
        """The run's next event, built (its fields checked) but not appended yet: for ``emit_all``."""
        if type in _TRACED_EVENTS and "trace_id" not in fields and tracing.enabled():
            fields["trace_id"] = tracing.current_trace_id()
        return Event.create(type, self.run_id, **fields)

    def trusted_events(self, type: EventType, given: list[dict[str, Any]]) -> list[Event]:
        """``event`` for events of one type made together (a read's progress), of fields of their declared types
        already, not validated again (``Event.trusted_all``)."""
        if type in _TRACED_EVENTS and tracing.enabled():
            for fields in given:
                if "trace_id" not in fields:
                    fields["trace_id"] = tracing.current_trace_id()
        return Event.trusted_all(type, self.run_id, given)

    async def emit(self, type: EventType | str, **fields: Any) -> Event:
        """Append one event now; returns it with its seq. Lifecycle steps are also logged, counted and charged
        (spend.py)."""
        return await self._append(self.event(type, **fields))

    async def emit_all(self, events: Sequence[Event]) -> AsyncGenerator[Event, None]:
        """Append ``events`` (built by ``event`` or ``trusted_events``) together, in order: each yielded once
        durable, like ``emit``'s.

        One event is an ``append``; several go to the log at once (``EventLog.append_all``:
        SQLite commits them in one transaction), timed once: the append histogram takes one
        observation per append (one per event would be a cost the relay pays on every chunk).
        """
        if len(events) == 1:
            yield await self._append(events[0])
            return
        started = time.perf_counter()
        timed = False
        async with aclosing(self.log.append_all(events)) as appended:
            async for stored in appended:
                if not timed:
                    metrics.record_append(time.perf_counter() - started)
                    timed = True
                self._observe(stored)
                if (charge := spend.bill(stored)) is not None:
                    await charge
                yield stored

    async def _append(self, event: Event) -> Event:
        started = time.perf_counter()
        stored = await self.log.append(event)
        metrics.record_append(time.perf_counter() - started)
        self._observe(stored)
        if (charge := spend.bill(stored)) is not None:
            await charge
        return stored

    def _observe(self, event: Event) -> None:
        """What follows an append: kept (``keep``), counted, logged."""
        if self.events is not None:
            self.events.append(event)
        self.usage.add(event)
        self._metrics.observe(event)
        if type(event) is RunStartedEvent:
            self._session_id = event.session_id
        _log(event, self._session_id)

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


def _log(event: Event, session_id: str | None) -> None:
    """One line for a person: the event's fields among ``_LOGGED_FIELDS`` that it has, whatever its type."""
    level = _LEVELS.get(event.type, logging.DEBUG)
    if not logger.isEnabledFor(level):
        return
    fields = event.fields
    details = " ".join(f"{key}={_shown(fields[key])!r}" for key in _LOGGED_FIELDS if fields.get(key) is not None)
    trace_id = tracing.current_trace_id()
    ids = (
        f"run={event.run_id}"
        + (f" session={session_id}" if session_id else "")
        + (f" trace={trace_id}" if trace_id else "")
    )
    extra = {"run_id": event.run_id, "session_id": session_id, "trace_id": trace_id, "event": event.type}
    logger.log(level, "%s seq=%d %s %s", ids, event.seq, event.type, details, extra=extra)
