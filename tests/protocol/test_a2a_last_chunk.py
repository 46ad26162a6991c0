"""``StreamEncoder.encode_batch`` marks each artifact's last chunk; ``StreamDecoder`` drops the closing chunk.

A chunk followed in its batch by the final status, or by a chunk of another artifact, is
marked in place; one whose end comes in a later batch gets a closing chunk (one empty text
part, ``append`` and ``lastChunk``) before what ends it, and the decoder reads nothing from
that closing chunk, so a relayed stream does not grow an empty part.
"""

from __future__ import annotations

from typing import Any

from protocol import Artifact, ArtifactEvent, StatusEvent, Task, TaskState, TaskStatus, TextPart
from protocol.a2a import StreamDecoder, StreamEncoder


def _chunk(seq: int, text: str, index: int = 0) -> ArtifactEvent:
    return ArtifactEvent(seq=seq, id="t", artifact=Artifact(index=index, append=True, parts=[TextPart(text=text)]))


def _end(seq: int) -> StatusEvent:
    return StatusEvent(seq=seq, id="t", status=TaskStatus(state=TaskState.COMPLETED), final=True)


def _updates(encoder: StreamEncoder, *batches: list[Any]) -> list[tuple[str, str, bool]]:
    """(artifactId, text, lastChunk) of each artifact update the batches become."""
    updates = []
    for batch in batches:
        for response in encoder.encode_batch(batch):
            if response.artifact_update is not None:
                update = response.artifact_update
                text = "".join(part.text or "" for part in update.artifact.parts)
                updates.append((update.artifact.artifact_id, text, bool(update.last_chunk)))
    return updates


def _encoder() -> StreamEncoder:
    return StreamEncoder(Task(id="t", session_id="s", status=TaskStatus(state=TaskState.WORKING)))


def test_a_chunk_whose_end_is_in_its_batch_is_marked_in_place() -> None:
    updates = _updates(_encoder(), [_chunk(1, "a"), _chunk(2, "b", index=1), _chunk(3, "c", index=1), _end(4)])
    assert updates == [("artifact-0", "a", True), ("artifact-1", "b", False), ("artifact-1", "c", True)]


def test_a_chunk_whose_end_comes_later_is_closed_by_an_empty_last_chunk() -> None:
    updates = _updates(_encoder(), [_chunk(1, "a")], [_chunk(2, "b")], [_chunk(3, "x", index=1)], [_end(4)])
    assert updates == [
        ("artifact-0", "a", False),
        ("artifact-0", "b", False),
        ("artifact-0", "", True),
        ("artifact-1", "x", False),
        ("artifact-1", "", True),
    ]


def test_the_decoder_reads_nothing_from_a_closing_chunk() -> None:
    encoder, decoder = _encoder(), StreamDecoder()
    events = decoder.decode(encoder.opening())
    for batch in ([_chunk(1, "a")], [_end(2)]):
        for response in encoder.encode_batch(batch):
            events += decoder.decode(response)
    assert [type(event).__name__ for event in events] == ["StatusEvent", "ArtifactEvent", "StatusEvent"]
    assert [event.seq for event in events] == [0, 1, 2]
