"""The NDJSON peer reads an artifact line of one plain text part by hand (``TextLine``), as pydantic reads it."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings, strategies as st

from gateway.calls.result import AgentToolResult
from gateway.peers.a2a_http import _text_chunk
from gateway.peers.base import TextLine
from protocol import Artifact, ArtifactEvent, ArtifactFold, TextPart, parse_stream_event
from tests.support.fast_paths import bent

_LINE = {"seq": 3, "id": "t1", "cost_usd": 0.0, "final": False, "type": "artifact"}
_ARTIFACT = {"parts": [{"type": "text", "text": "chunk-0 "}], "index": 0, "append": True}
_ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(["", "text", "artifact", "t1", "1"]),
    st.lists(st.integers(0, 1), max_size=2),
)


def _maybe(draw: st.DrawFn, values: dict[str, Any], extra: list[str]) -> dict[str, Any]:
    """``values``, now and then one left out or replaced by any value, and now and then a key of ``extra``."""
    return bent(draw, values, extra, _ANY)


@st.composite
def _lines(draw: st.DrawFn) -> dict[str, Any]:
    part = _maybe(draw, {"type": "text", "text": draw(st.text(max_size=5))}, ["metadata"])
    parts = draw(st.sampled_from([[part]] * 6 + [[], [part, part], "text"]))
    artifact = _maybe(draw, {"parts": parts, "index": 0, "append": True}, ["name", "lastChunk", "last_chunk"])
    return _maybe(draw, {**_LINE, "artifact": artifact}, ["costUsd", "extra"])


def _same(chunk: TextLine, line: dict[str, Any]) -> None:
    event = parse_stream_event(line)
    assert isinstance(event, ArtifactEvent)
    assert (chunk.seq, chunk.id, chunk.cost_usd, chunk.final) == (event.seq, event.id, event.cost_usd, event.final)
    assert chunk.artifact == event.artifact
    assert chunk.to_wire() == event.to_wire()


@settings(max_examples=400, deadline=None)
@given(_lines())
def test_a_line_read_by_hand_is_one_pydantic_reads_the_same(line: dict[str, Any]) -> None:
    chunk = _text_chunk(line)
    if chunk is not None:
        _same(chunk, line)


def test_the_agent_servers_text_chunks_are_read_by_hand_and_the_rest_by_pydantic() -> None:
    plain = {**_LINE, "artifact": _ARTIFACT}
    chunk = _text_chunk(orjson.loads(orjson.dumps(plain)))
    assert chunk is not None
    _same(chunk, plain)
    for other in (
        {**plain, "cost_usd": 0},  # an integer: pydantic makes it 0.0
        {**plain, "cost_usd": -0.5},  # the call refuses it, with its own message
        {**plain, "final": True},
        {**plain, "artifact": {**_ARTIFACT, "name": "report"}},
        {**plain, "artifact": {**_ARTIFACT, "parts": [{"text": "no type"}]}},
        {**plain, "artifact": {**_ARTIFACT, "parts": [{"type": "text", "text": "a", "metadata": {"k": 1}}]}},
        {**plain, "artifact": {**_ARTIFACT, "parts": [{"type": "text", "text": "a"}] * 2}},
        {**plain, "type": "status"},
    ):
        assert _text_chunk(other) is None, other


_FOLDED = st.lists(st.tuples(st.integers(0, 2), st.sampled_from([True, False, None]), st.text(max_size=3)), max_size=12)


@given(_FOLDED)
def test_text_chunks_fold_into_the_artifacts_their_models_would(chunks: list[tuple[int, bool | None, str]]) -> None:
    by_fields, by_models = ArtifactFold(), ArtifactFold()
    result = AgentToolResult(call_id="c", tool="t", agent="a", mode="streaming", run_id="r")
    for index, append, text in chunks:
        by_fields.add_text(index, append, text)
        by_models.add(Artifact(parts=[TextPart(text=text)], index=index, append=append))
        result.add_streamed_text(index, append, text)
    result.settle()
    assert by_fields.artifacts == by_models.artifacts == result.artifacts
    assert result.text == "".join(text for _, _, text in chunks)
