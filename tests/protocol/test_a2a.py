"""protocol/a2a and protocol/sse without I/O: SSE cut anywhere, one mapping round both versions, streams resumed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from protocol import (
    Artifact,
    ArtifactEvent,
    DataPart,
    FileContent,
    FilePart,
    Message,
    OversizedEvent,
    SSEDecoder,
    SSEEvent,
    StatusEvent,
    Task,
    TaskState,
    TaskStatus,
    TextPart,
    encode_event,
)
from protocol.a2a import StreamDecoder, StreamEncoder, task_from_v1, task_to_v1, v03, v1

_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"), max_size=40)
"""Event data: JSON in practice, so never a bare CR (a line ending of its own in SSE); newlines are data lines."""


@settings(max_examples=60, deadline=None)
@given(datas=st.lists(_TEXT, min_size=1, max_size=5), cuts=st.lists(st.integers(min_value=0), max_size=8))
def test_sse_events_read_back_whole_however_the_bytes_are_cut(datas: list[str], cuts: list[int]) -> None:
    stream = b"".join(encode_event(data.encode()) for data in datas)
    points = sorted({cut % (len(stream) + 1) for cut in cuts})
    pieces = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    decoder = SSEDecoder()
    items = [item for piece in pieces for item in decoder.feed(piece)]
    assert items == [SSEEvent("message", data) for data in datas]


def test_sse_names_comments_crlf_oversize_and_a_cut_off_event() -> None:
    decoder = SSEDecoder(max_event_bytes=16)
    items = decoder.feed(
        b": a comment\r\nevent: error\r\ndata: {}\r\n\r\nid: 7\ndata: " + b"x" * 40 + b"\n\ndata: ok\n\n"
    )
    assert items == [SSEEvent("error", "{}"), OversizedEvent(size=41, limit=16), SSEEvent("message", "ok")]
    assert decoder.feed(b"data: never ended\n") == [] and decoder.close() == []


def _task() -> Task:
    return Task(
        id="t1",
        session_id="s1",
        status=TaskStatus(
            state=TaskState.INPUT_REQUIRED, message=Message(role="agent", parts=[TextPart(text="which?")])
        ),
        artifacts=[
            Artifact(
                index=0,
                name="answer",
                parts=[
                    TextPart(text="hello"),
                    DataPart(data={"k": [1, 2]}),
                    FilePart(file=FileContent(name="a.txt", mime_type="text/plain", bytes="aGk=")),
                    FilePart(file=FileContent(uri="https://example.org/x.png", mime_type="image/png")),
                ],
            )
        ],
        history=[Message(role="user", message_id="m1", parts=[TextPart(text="ask which?")])],
        metadata={"cost_usd": 0.5, "handoff": {"target": "billing"}},
    )


def test_a_task_survives_v1_and_v03_both_ways() -> None:
    task = _task()
    standard = task_to_v1(task)
    wire = standard.to_wire()
    assert wire["status"]["state"] == "TASK_STATE_INPUT_REQUIRED" and wire["contextId"] == "s1"
    assert [set(p) - {"metadata", "filename", "mediaType"} for p in wire["artifacts"][0]["parts"]] == [
        {"text"},
        {"data"},
        {"raw"},
        {"url"},
    ]
    legacy = v03.task_from_v1(standard).to_wire()
    assert legacy["kind"] == "task" and legacy["status"]["state"] == "input-required"
    assert [p["kind"] for p in legacy["artifacts"][0]["parts"]] == ["text", "data", "file", "file"]
    back = task_from_v1(v03.task_to_v1(v03.Task.model_validate(legacy)))
    assert back.status.state == task.status.state and back.metadata == task.metadata
    assert back.status.message is not None and back.status.message.parts == [TextPart(text="which?")]
    assert back.artifacts[0].parts == task.artifacts[0].parts
    assert back.history is not None and back.history[0].message_id == "m1"


@pytest.mark.parametrize(
    ("part", "problem"),
    [({}, "found: none"), ({"text": "a", "url": "u"}, "found: text, url")],
)
def test_a_v1_part_holds_exactly_one_content(part: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        v1.Part.model_validate(part)


def test_a_resubscribed_stream_passes_on_only_what_the_snapshot_adds() -> None:
    running = Task(id="t1", session_id="s1", status=TaskStatus(state=TaskState.WORKING))
    encoder = StreamEncoder(running)
    chunk = ArtifactEvent(
        seq=1, id="t1", artifact=Artifact(index=0, parts=[TextPart(text="ab")], append=True), cost_usd=0.1
    )
    decoder = StreamDecoder()
    first = decoder.decode(encoder.opening()) + decoder.decode(encoder.encode(chunk))
    assert [type(e).__name__ for e in first] == ["StatusEvent", "ArtifactEvent"]
    # the stream broke; the resubscribe opens with the task as it is now: "abcd", completed, $0.3 in all
    now = running.model_copy(
        update={
            "status": TaskStatus(state=TaskState.COMPLETED),
            "artifacts": [Artifact(index=0, parts=[TextPart(text="abcd")])],
            "metadata": {"cost_usd": 0.3},
        }
    )
    resumed = decoder.decode(v1.StreamResponse(task=task_to_v1(now)))
    [more, done] = resumed
    assert isinstance(more, ArtifactEvent) and more.artifact.parts == [TextPart(text="cd")] and more.artifact.append
    assert more.cost_usd == pytest.approx(0.2), "only the cost not yet counted"
    assert isinstance(done, StatusEvent) and done.final and done.status.state == TaskState.COMPLETED
    assert [e.seq for e in first + resumed] == [0, 1, 2, 3]
