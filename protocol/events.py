"""The lines of an A2A-NDJSON stream: status, artifact and handoff events.

``seq`` counts from 0 without gaps; ``cost_usd`` is the line's own cost (a delta) and keeps
its snake_case spelling on the wire; exactly one line is ``final`` and it is the last.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, overload

from pydantic import Field, TypeAdapter

from protocol._wire import WireModel
from protocol.task import Artifact, TaskStatus


class HandoffRequest(WireModel):
    """A remote agent's request that the coordinator transfer the conversation."""

    target: str = Field(min_length=1)
    reason: str | None = None
    payload: dict[str, Any] | None = None


class _EncodedOnce:
    """``functools.cached_property`` of ``to_json()`` without its lock (Python 3.11 takes one at every read, on
    every event a send streams): the first read keeps the JSON in the event's ``__dict__``, where later reads
    find it."""

    @overload
    def __get__(self, event: None, owner: type[Any]) -> _EncodedOnce: ...
    @overload
    def __get__(self, event: _StreamEventBase, owner: type[Any]) -> bytes: ...
    def __get__(self, event: _StreamEventBase | None, owner: type[Any]) -> bytes | _EncodedOnce:
        if event is None:
            return self
        encoded: bytes = event.to_json()
        event.__dict__["encoded"] = encoded
        return encoded


class _StreamEventBase(WireModel):
    seq: int = Field(ge=0)
    id: str
    cost_usd: float | None = Field(default=None, alias="cost_usd")
    final: bool = False

    encoded: ClassVar[_EncodedOnce] = _EncodedOnce()
    """The event's JSON, made once and shared by the store and every stream that writes it.

    Nobody changes an event once it is published, so the first encoding stays true.
    """


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
