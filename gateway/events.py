"""The one event schema of the gateway: every step of a run is an Event in the event log.

An event is flat on the wire: ``{"seq", "run_id", "type", "timestamp_ms", ...fields}``.
``seq`` is assigned by the event log when the event is appended and counts from 0 per run.
"""

from __future__ import annotations

import enum
import time
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict


class EventType(str, enum.Enum):
    # agent-as-tool calls
    AGENT_TOOL_INVOKED = "agent_tool_invoked"
    AGENT_TOOL_PROGRESS = "agent_tool_progress"
    AGENT_TOOL_COMPLETED = "agent_tool_completed"
    AGENT_TOOL_TERMINATED = "agent_tool_terminated"
    AGENT_TOOL_ERROR = "agent_tool_error"
    # swarm runs
    RUN_STARTED = "run_started"
    RUN_COMPLETED = "run_completed"
    RUN_FAILED = "run_failed"
    MESSAGE = "message"
    TEXT_DELTA = "text_delta"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    HANDOFF = "handoff"
    AGENT_CHANGED = "agent_changed"
    HANDOFF_REFUSED = "handoff_refused"
    CYCLE_DETECTED = "cycle_detected"
    LIMIT_REACHED = "limit_reached"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Event(BaseModel):
    """One recorded step. Type-specific fields ride along as extra fields."""

    model_config = ConfigDict(extra="allow", frozen=True)

    type: str
    run_id: str
    seq: int = -1
    timestamp_ms: int

    @classmethod
    def create(cls, type: EventType | str, run_id: str, **fields: Any) -> Event:
        kind = type.value if isinstance(type, EventType) else type
        return cls(type=kind, run_id=run_id, timestamp_ms=now_ms(), **fields)

    @property
    def fields(self) -> dict[str, Any]:
        """The type-specific fields."""
        return dict(self.model_extra or {})

    def with_seq(self, seq: int) -> Event:
        return self.model_copy(update={"seq": seq})

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Event:
        return cls.model_validate(data)
