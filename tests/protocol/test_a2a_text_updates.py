"""The fast paths of the SSE streams give what the slow ones give: bulk SSE framing, text updates written and read
without the v1.0 models (protocol/a2a/text_updates.py)."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings, strategies as st

from protocol import (
    Artifact,
    ArtifactEvent,
    DataPart,
    HandoffEvent,
    HandoffRequest,
    SSEDecoder,
    StatusEvent,
    StreamEvent,
    Task,
    TaskState,
    TaskStatus,
    TextPart,
)
from protocol.a2a import StreamDecoder, StreamEncoder, v1
from protocol.a2a.text_updates import read_text_update
from tests.support.fast_paths import ADD, bent, read_alike

# -- SSE framing ----------------------------------------------------------------------------

_EVENT_BLOCKS = st.sampled_from(
    [
        b'data: {"a":1}\n\n',
        b'data: {"text":"\xc3\xa9t\xc3\xa9"}\n\n',
        b"data: " + b"x" * 30 + b"\n\n",  # over the limit below
        b"data: two\ndata: lines\n\n",
        b"event: error\ndata: {}\n\n",
        b"data: crlf\r\n\r\n",
        b": a comment\ndata: after\n\n",
        b"data:no-space\n\n",
        b"id: 3\nretry: 5\ndata: z\n\n",
        b"data: \xff\xfe\n\n",
        b"\n",
        b"data: \n\n",
    ]
)


def _line_by_line(max_event_bytes: int) -> SSEDecoder:
    """A decoder that never takes the bulk path: every event goes line by line."""
    decoder = SSEDecoder(max_event_bytes)
    decoder._simple_events = lambda chunk, start, out: start  # type: ignore[method-assign]
    return decoder


@settings(max_examples=150, deadline=None)
@given(blocks=st.lists(_EVENT_BLOCKS, max_size=10), cuts=st.lists(st.integers(min_value=0), max_size=6))
def test_sse_read_in_bulk_as_it_is_read_line_by_line(blocks: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(blocks)
    points = sorted({cut % (len(stream) + 1) for cut in cuts})
    pieces = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    bulk, reference = SSEDecoder(max_event_bytes=24), _line_by_line(24)
    assert [item for piece in pieces for item in bulk.feed(piece)] == [
        item for piece in pieces for item in reference.feed(piece)
    ]


# -- writing --------------------------------------------------------------------------------

_COSTS = st.sampled_from([None, None, 0.0, 0.25, math.inf])


@st.composite
def _artifact_events(draw: st.DrawFn) -> ArtifactEvent:
    part = draw(
        st.sampled_from(
            [
                TextPart(text="chunk "),
                TextPart(text=""),
                TextPart(text="é", metadata={"k": 1}),
                DataPart(data={"v": 1}),
            ]
        )
    )
    parts = draw(st.sampled_from([[part]] * 5 + [[part, TextPart(text="b")]]))
    artifact = Artifact(
        index=draw(st.integers(0, 2)),
        parts=parts,
        append=draw(st.sampled_from([None, True, False])),
        last_chunk=draw(st.sampled_from([None, None, True, False])),
        name=draw(st.sampled_from([None, None, "answer"])),
        metadata=draw(st.sampled_from([None, None, {"m": 1}])),
    )
    return ArtifactEvent(seq=0, id="t", artifact=artifact, cost_usd=draw(_COSTS))


_OTHER_EVENTS = st.sampled_from(
    [
        StatusEvent(seq=0, id="t", status=TaskStatus(state=TaskState.WORKING), cost_usd=0.5),
        StatusEvent(seq=0, id="t", status=TaskStatus(state=TaskState.COMPLETED), final=True),
        HandoffEvent(seq=0, id="t", handoff=HandoffRequest(target="b")),
    ]
)


@settings(max_examples=200, deadline=None)
@given(
    batches=st.lists(st.lists(st.one_of(_artifact_events(), _OTHER_EVENTS), max_size=5), max_size=4),
    context=st.sampled_from([None, "c"]),
)
def test_a_stream_is_written_as_the_models_write_it(batches: list[list[StreamEvent]], context: str | None) -> None:
    task = Task(id="t", session_id=context, status=TaskStatus(state=TaskState.WORKING))
    models, wire = StreamEncoder(task), StreamEncoder(task)
    for batch in batches:
        assert wire.encode_batch_wire(batch) == [response.to_wire() for response in models.encode_batch(batch)]


# -- reading --------------------------------------------------------------------------------

_ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1, 2),
    st.sampled_from([0.0, 0.5, -0.5, math.inf, "0.5", "", "x", "t"]),
    st.lists(st.integers(0, 1), max_size=2),
)


def _maybe(draw: st.DrawFn, values: dict[str, Any], extra: list[str]) -> dict[str, Any]:
    return bent(draw, values, extra, _ANY)


@st.composite
def _results(draw: st.DrawFn) -> dict[str, Any]:
    """A text update's wire JSON as the encoder writes it, now and then bent out of that shape."""
    part = _maybe(draw, {"text": draw(st.sampled_from(["chunk ", "", "é"]))}, ["metadata", "mediaType"])
    parts = draw(st.sampled_from([[part]] * 6 + [[], [part, part]]))
    artifact_id = draw(st.sampled_from(["artifact-0", "artifact-1", "other"]))
    artifact = _maybe(draw, {"artifactId": artifact_id, "parts": parts}, ["name", "metadata"])
    metadata = draw(st.sampled_from([{"costUsd": 0.0}, {"costUsd": 0.25}, {"cost_usd": 0.5}, {"costUsd": 1}, {}]))
    update = _maybe(
        draw,
        {"taskId": "t", "contextId": "c", "artifact": artifact, "append": True, "metadata": metadata},
        ["lastChunk", "task_id", "extra"],
    )
    return {"artifactUpdate": update, **({"task": {}} if draw(ADD) else {})}


def _slow(decoder: StreamDecoder, result: dict[str, Any]) -> list[StreamEvent] | None:
    try:
        return decoder.decode(v1.StreamResponse.model_validate(result))
    except ValueError:  # pydantic's ValidationError included
        return None


@settings(max_examples=500, deadline=None)
@given(results=st.lists(_results(), min_size=1, max_size=4))
def test_text_updates_are_read_as_the_models_read_them(results: list[dict[str, Any]]) -> None:
    slow, fast = read_alike(results, _slow, read_text_update)
    status = {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-01T00:00:00Z"}
    snapshot = v1.StreamResponse.model_validate({"task": {"id": "t", "status": status, "metadata": {"costUsd": 2.0}}})
    assert fast.decode(snapshot) == slow.decode(snapshot)  # what was passed on is known alike


def test_the_commonest_shape_is_read_fast() -> None:
    result = {
        "artifactUpdate": {
            "taskId": "t",
            "contextId": "c",
            "artifact": {"artifactId": "artifact-0", "parts": [{"text": "chunk-1 "}]},
            "append": True,
            "metadata": {"costUsd": 0.0},
        }
    }
    update = read_text_update(result)
    assert update is not None and (update.text, update.append, update.cost_usd) == ("chunk-1 ", True, 0.0)
    for other in ({**result["artifactUpdate"], "lastChunk": True}, {**result["artifactUpdate"], "metadata": {}}):
        assert read_text_update({"artifactUpdate": other}) is None
