"""The events of a relayed stream, built and written without going through pydantic.

A relayed stream makes one ``agent_tool_progress`` event per chunk, and building and
writing those events would otherwise be a large share of the gateway's work per chunk.
Their values are the gateway's own, or read from a stream line that was checked already,
so validating them again would only repeat a check. This module builds such an event as
validation would have built it (its ``__dict__``, the fields set, no extra fields) and
writes its JSON with orjson from the fields given, leaving to pydantic's serializer only
a value that is not a plain JSON type. ``tests/gateway/recording/test_trusted_events.py`` holds both ways
to the same event and the same JSON.

The JSON an event keeps (the log keeps its events, and each event its JSON once it is
numbered) is a copy holding only its bytes: orjson's own output keeps its whole write
buffer allocated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_JSON_TYPES_ONLY = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
"""orjson refuses what is not a plain JSON type (str, int, float, bool, None, list, dict), whose JSON is pydantic's."""

assign = object.__setattr__
"""Sets an attribute of a frozen model: for its maker, and for the log that numbers it, once."""


def unvalidated(model: type[M], values: dict[str, Any], given: set[str]) -> M:
    """An instance of ``model`` holding ``values`` as they are (every field, in declared order), ``given`` being
    the fields set: what ``model(**values)`` makes when the values have their declared types already."""
    instance = model.__new__(model)
    assign(instance, "__dict__", values)
    assign(instance, "__pydantic_fields_set__", given)
    assign(instance, "__pydantic_extra__", None)
    assign(instance, "__pydantic_private__", None)
    return instance


def right_sized(encoded: bytes) -> bytes:
    """A copy of orjson's output that holds only its bytes, to be kept."""
    return b"".join((encoded, b""))


def line_head(kind: str, run_id: str) -> bytes:
    """The JSON an event's line begins with, up to its seq: its type and its run, the same for the events of one
    type that a run makes together, so written once for them."""
    return b'{"type":%s,"run_id":%s,"seq":' % (orjson.dumps(kind), orjson.dumps(run_id))


def given_json(head: bytes, seq: int, timestamp_ms: int, given: dict[str, Any]) -> bytes | None:
    """An event's JSON from ``line_head``'s bytes, its seq and timestamp, then ``given`` (its own fields), written by
    orjson: the bytes orjson writes for the whole event as one dict, without the dict. None when a value is not a
    plain JSON type (pydantic writes those)."""
    try:
        fields = orjson.dumps(given, option=_JSON_TYPES_ONLY)
    except TypeError:
        return None
    # ``fields`` opens with its brace, left out; a slice and a format make a copy of just their bytes
    return b'%s%d,"timestamp_ms":%d%s%s' % (head, seq, timestamp_ms, b"," if given else b"", fields[1:])


def model_json(model: BaseModel, *, complete: bool, wire: Callable[[], dict[str, Any]]) -> bytes:
    """A validated model's JSON, its unset fields left out: pydantic's serializer when ``complete`` (every field
    that is always written was set), else orjson's JSON of ``wire()``."""
    if complete:
        return model.__pydantic_serializer__.to_json(model, exclude_unset=True)
    return right_sized(orjson.dumps(wire()))
