"""The event schema: each type declared once, enforced where events are made, documented from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from gateway.recording.events import Event, EventType, reference

DOCS = Path(__file__).resolve().parents[3] / "docs" / "events.md"
MARKER = "<!-- the tables below are generated from gateway/recording/events.py: python -m gateway.recording.events -->"


def test_the_docs_tables_are_the_schema() -> None:
    documented = DOCS.read_text(encoding="utf-8").split(MARKER, 1)[1]
    assert documented.strip() == reference().strip(), "docs/events.md is stale: run python -m gateway.recording.events"


def test_every_type_is_documented_with_its_own_fields() -> None:
    text = reference()
    for kind in EventType:
        assert f"### `{kind.value}`" in text
    assert "| `chunk_index` | `int` |" in text
    assert "| `run_id` |" not in text  # the common fields are documented once, above the tables


def test_a_field_the_type_does_not_declare_is_refused_where_the_event_is_made() -> None:
    with pytest.raises(ValidationError, match="kind"):
        Event.create(EventType.AGENT_TOOL_ERROR, "run_1", call_id="c1", kind="timeout")
    with pytest.raises(ValidationError, match="chunk_index"):
        Event.create(EventType.AGENT_TOOL_PROGRESS, "run_1", call_id="c1", chunk_index="first")


def test_only_the_fields_given_are_written() -> None:
    event = Event.create(EventType.AGENT_TOOL_ERROR, "run_1", call_id="c1", reason="timeout")
    data = event.to_dict()
    assert data["reason"] == "timeout"
    assert "message" not in data
    assert set(data) == {"type", "run_id", "seq", "timestamp_ms", "call_id", "reason"}


def test_an_event_another_version_wrote_is_read_back_whole() -> None:
    written = {"type": "agent_tool_error", "run_id": "r", "seq": 3, "timestamp_ms": 1, "kind": "timeout"}
    assert Event.from_dict(written).to_dict() == written
    unknown = {"type": "future_event", "run_id": "r", "seq": 0, "timestamp_ms": 1, "anything": [1]}
    assert Event.from_dict(unknown).to_dict() == unknown
