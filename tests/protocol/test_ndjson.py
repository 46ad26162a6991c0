"""The NDJSON codec: bytes cut anywhere, bad bytes and bad lines never stop a stream.

Bad input comes out as typed items (``MalformedLine``, ``SkippedBytes``, ``OversizedLine``),
never in-band, and the decoder does no logging: the caller records what it saw.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings, strategies as st

from protocol import DecodedLine, MalformedLine, NDJSONDecoder, OversizedLine, SkippedBytes, aiter_ndjson, encode_line

_json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
_objects = st.dictionaries(st.text(max_size=10), _json_values, max_size=4)


def _decode(data: bytes, cuts: list[int], max_line_bytes: int = 1 << 20) -> list[DecodedLine]:
    decoder = NDJSONDecoder(max_line_bytes)
    out: list[DecodedLine] = []
    previous = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        out += decoder.feed(data[previous:cut])
        previous = cut
    out += decoder.feed(data[previous:])
    return out + decoder.close()


@given(st.lists(_objects, max_size=8), st.lists(st.integers(min_value=0), max_size=12))
def test_any_split_of_a_valid_stream_gives_the_same_events(objects: list[dict], cuts: list[int]) -> None:
    data = b"".join(encode_line(o) for o in objects)
    assert _decode(data, cuts) == objects


@given(st.binary(max_size=300), st.lists(st.integers(min_value=0), max_size=8), st.integers(1, 64))
def test_random_bytes_never_raise(data: bytes, cuts: list[int], max_line_bytes: int) -> None:
    items = _decode(data, cuts, max_line_bytes)
    for item in items:
        assert isinstance(item, dict | MalformedLine | OversizedLine | SkippedBytes)
    lines = data.split(b"\n")
    oversized = sum(1 for line in lines if len(line) > max_line_bytes)
    assert sum(isinstance(item, OversizedLine) for item in items) == oversized, "one report per oversized line"


def test_a_malformed_line_comes_out_as_its_own_type_and_the_stream_goes_on() -> None:
    data = b'{"a": 1}\n{oops\n[1, 2]\n"text"\n\n{"b": 2}'
    assert _decode(data, []) == [
        {"a": 1},
        MalformedLine("{oops"),
        MalformedLine("[1, 2]"),
        MalformedLine('"text"'),
        {"b": 2},
    ]


def test_a_legitimate_raw_object_is_not_taken_for_a_malformed_line() -> None:
    assert _decode(b'{"raw": "legit"}\n{"raw"\n', []) == [{"raw": "legit"}, MalformedLine('{"raw"')]


def test_crlf_line_endings_are_accepted() -> None:
    assert _decode(b'{"a": 1}\r\n{"b": 2}\r\n', [3]) == [{"a": 1}, {"b": 2}]


def test_non_utf8_bytes_are_skipped_and_reported_before_their_line(caplog: pytest.LogCaptureFixture) -> None:
    out = _decode(b'{"a": "x\xff\xfey"}\n{"b": 1}\n\xff{bad\n', [5])
    assert out == [SkippedBytes(2), {"a": "xy"}, {"b": 1}, SkippedBytes(1), MalformedLine("{bad")]
    assert not caplog.records, "protocol does no logging: the caller logs what it is told"


def test_a_multibyte_character_cut_in_two_survives() -> None:
    data = encode_line({"t": "añ€😀"})
    for cut in range(len(data)):
        assert _decode(data, [cut]) == [{"t": "añ€😀"}]


def test_an_oversized_line_is_reported_as_soon_as_it_crosses_the_limit_and_never_buffered_whole() -> None:
    limit = 1 << 20
    decoder = NDJSONDecoder(max_line_bytes=limit)
    chunk = b"x" * (64 * 1024)
    total = 0
    out: list[DecodedLine] = [*decoder.feed(b'{"before": 1}\n')]
    reported_at: int | None = None
    while total < 50 * 1024 * 1024:
        out += decoder.feed(chunk)
        total += len(chunk)
        if reported_at is None and any(isinstance(item, OversizedLine) for item in out):
            reported_at = total
        assert len(decoder._buffer) <= limit
    assert reported_at == limit + len(chunk), "reported by the feed whose bytes crossed the limit"
    out += decoder.feed(b'\n{"after": 2}\n')
    assert out == [{"before": 1}, OversizedLine(size=limit + len(chunk), limit=limit), {"after": 2}]


def test_an_oversized_line_is_reported_once_even_when_its_end_arrives_with_the_next_line() -> None:
    assert _decode(b"a" * 10 + b"b" * 10 + b'\n{"x": 1}\n', [10], max_line_bytes=12) == [
        OversizedLine(size=20, limit=12),
        {"x": 1},
    ]


def test_a_line_of_exactly_the_limit_is_kept() -> None:
    line = encode_line({"k": "v" * 20})
    assert _decode(line, [], max_line_bytes=len(line) - 1) == [{"k": "v" * 20}]
    assert isinstance(_decode(line, [], max_line_bytes=len(line) - 2)[0], OversizedLine)


def test_the_last_line_without_newline_is_flushed_on_close() -> None:
    decoder = NDJSONDecoder()
    assert decoder.feed(b'{"a": 1}') == []
    assert decoder.close() == [{"a": 1}]


def test_encode_line_writes_models_in_wire_form() -> None:
    from protocol import Message

    assert encode_line(Message.user("hi")) == b'{"role":"user","parts":[{"type":"text","text":"hi"}]}\n'


@pytest.mark.anyio
async def test_aiter_ndjson_decodes_an_async_byte_stream() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for piece in (b'{"a"', b': 1}\n{"b":', b" 2}\n{bad", b"\n"):
            yield piece

    assert [item async for item in aiter_ndjson(chunks())] == [{"a": 1}, {"b": 2}, MalformedLine("{bad")]


@settings(max_examples=50)
@given(st.lists(_objects, min_size=1, max_size=5), st.lists(st.integers(min_value=0), max_size=6))
def test_garbage_between_valid_lines_never_loses_them(objects: list[dict], cuts: list[int]) -> None:
    data = b"\xff\xfe{{\n".join(encode_line(o) for o in objects)
    expected: list[DecodedLine] = []
    for obj in objects:
        expected += [SkippedBytes(2), MalformedLine("{{"), obj] if expected else [obj]
    assert _decode(data, cuts) == expected
