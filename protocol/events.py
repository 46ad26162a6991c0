"""The lines of an A2A-NDJSON stream: status, artifact and handoff events.

``seq`` counts from 0 without gaps; ``cost_usd`` is the line's own cost (a delta) and keeps
its snake_case spelling on the wire; exactly one line is ``final`` and it is the last.
"""

from __future__ import annotations

from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from ._wire import WireModel
from .task import Artifact, TaskStatus


class HandoffRequest(WireModel):
    """A remote agent's request that the coordinator transfer the conversation."""

    target: str = Field(min_length=1)
    reason: str | None = None
    payload: dict[str, Any] | None = None


class _StreamEventBase(WireModel):
    seq: int = Field(ge=0)
    id: str
    cost_usd: float | None = Field(default=None, alias="cost_usd")
    final: bool = False

    @cached_property
    def encoded(self) -> bytes:
        """The event's JSON, made once and shared by the store and every stream that writes it.

        Nobody changes an event once it is published, so the first encoding stays true.
        """
        return self.to_json()


class StatusEvent(_StreamEventBase):
    type: Literal["status"] = "status"
    status: TaskStatus


class ArtifactEvent(_StreamEventBase):
    type: Literal["artifact"] = "artifact"
    artifact: Artifact


class HandoffEvent(_StreamEventBase):
    type: Literal["handoff"] = "handoff"
    handoff: HandoffRequest


StreamEvent = Annotated[StatusEvent | ArtifactEvent | HandoffEvent, Field(discriminator="type")]

_stream_event_adapter: TypeAdapter[StatusEvent | ArtifactEvent | HandoffEvent] = TypeAdapter(StreamEvent)


def parse_stream_event(obj: Any) -> StatusEvent | ArtifactEvent | HandoffEvent:
    """Validate one decoded stream line; raises pydantic.ValidationError when it is not an event."""
    return _stream_event_adapter.validate_python(obj)
