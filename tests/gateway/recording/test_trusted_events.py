"""Events made without validation (``Event.trusted``, one per relayed chunk) are the events validation makes."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from gateway import Gateway, MemoryEventLog, SQLiteEventLog
from gateway.event_log import EventLog
from gateway.recording.events import Event, EventType

pytestmark = pytest.mark.anyio

_CALL = {"call_id": "call_1", "agent": "http://127.0.0.1:9", "tool": "research"}
_FIELDS: list[dict[str, Any]] = [
    {**_CALL, "chunk_index": 0, "kind": "artifact", "accumulated_cost_usd": 0.25, "cost_usd": 0.25, "text": "héllo"},
    {**_CALL, "chunk_index": 1, "kind": "artifact", "accumulated_cost_usd": 0.0, "data": [{"rows": [1, 2.5, None]}]},
    {**_CALL, "chunk_index": 2, "kind": "status", "accumulated_cost_usd": 1e-7, "state": "working", "skipped_bytes": 3},
    {**_CALL, "chunk_index": 3, "kind": "raw", "accumulated_cost_usd": 0.0, "raw": {"not": ["an", "event"]}},
    {**_CALL, "chunk_index": 4, "kind": "handoff", "accumulated_cost_usd": 0.0, "handoff": {"target": "billing"}},
    {**_CALL, "chunk_index": 5, "kind": "resubscribed", "accumulated_cost_usd": 0.0, "attempt": 1, "message": "cut"},
]


def _pair(fields: dict[str, Any]) -> tuple[Event, Event]:
    """The same event made both ways, numbered 7, with the same timestamp."""
    validated = Event.create(EventType.AGENT_TOOL_PROGRESS, "run_1", **fields)
    trusted = Event.trusted(EventType.AGENT_TOOL_PROGRESS, "run_1", dict(fields))
    object.__setattr__(trusted, "timestamp_ms", validated.timestamp_ms)
    return validated.with_seq(7), trusted.with_seq(7)


@pytest.mark.parametrize("fields", _FIELDS, ids=[fields["kind"] for fields in _FIELDS])
def test_a_trusted_event_is_the_validated_event(fields: dict[str, Any]) -> None:
    validated, trusted = _pair(fields)
    assert type(trusted) is type(validated)
    assert trusted == validated
    assert trusted.fields == validated.fields == fields
    assert trusted.model_fields_set == validated.model_fields_set
    assert trusted.to_dict() == validated.to_dict()
    assert orjson.loads(trusted.to_json()) == orjson.loads(validated.to_json()) == trusted.to_dict()
    assert trusted.to_json() is trusted.to_json(), "its JSON is made once, once numbered"
    assert Event.from_dict(orjson.loads(trusted.to_json())) == validated, "read back, it is the same event"


def test_a_value_that_is_no_plain_json_type_is_written_as_pydantic_writes_it() -> None:
    fields = {**_CALL, "chunk_index": 0, "kind": "raw", "raw": {"at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)}}
    validated, trusted = _pair(fields)
    assert trusted.to_json() == validated.to_json()
    assert orjson.loads(trusted.to_json())["raw"] == {"at": "2026-01-02T03:04:05Z"}


def test_a_trusted_event_still_refuses_a_field_its_type_does_not_declare() -> None:
    with pytest.raises(ValueError, match="txt"):
        Event.trusted(EventType.AGENT_TOOL_PROGRESS, "run_1", {**_CALL, "chunk_index": 0, "txt": "typo"})


def test_a_copy_of_a_trusted_event_renumbered_has_its_own_json() -> None:
    _, trusted = _pair(_FIELDS[0])
    copy = trusted.with_seq(8)
    assert copy is not trusted and orjson.loads(copy.to_json())["seq"] == 8
    assert orjson.loads(trusted.to_json())["seq"] == 7


def test_the_json_an_event_keeps_takes_the_memory_of_its_bytes_only() -> None:
    """The memory log keeps every event and each event its JSON: orjson's bytes alone would keep its 4 KiB buffer."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [event.to_json() for _ in range(100) for event in _pair(_FIELDS[0])]  # the events are dropped
        per_json = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    finally:
        tracemalloc.stop()
    assert per_json < 2 * len(kept[0]), f"{per_json:.0f} bytes kept for {len(kept[0])} bytes of JSON"


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_every_progress_event_of_a_relayed_stream_passes_validation(
    kind: str, tmp_path: Path, scripted_url: str
) -> None:
    """The relay builds its progress events without validation: each is what validation makes of its fields."""
    log: EventLog = MemoryEventLog() if kind == "memory" else SQLiteEventLog(tmp_path / "events.db")
    async with Gateway(log) as gateway:
        gateway.add_agent_tool("research", scripted_url, mode="streaming")
        result = await gateway.call_tool("research", "stream 300 0 0", run_id="run-1")
        events = await log.read("run-1")
    progress = [event for event in events if event.type == EventType.AGENT_TOOL_PROGRESS.value]
    assert len(progress) == result.chunks > 300
    for event in progress:
        validated = Event.create(EventType.AGENT_TOOL_PROGRESS, "run-1", **event.fields)
        assert validated.fields == event.fields
        assert orjson.loads(event.to_json()) == {
            **validated.to_dict(),
            "seq": event.seq,
            "timestamp_ms": event.timestamp_ms,
        }
    assert "".join(event.fields.get("text", "") for event in progress) == result.text
