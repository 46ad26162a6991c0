"""The NDJSON codec: bytes cut anywhere, bad bytes and bad lines never stop a stream."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import NDJSONDecoder, OversizedLine, aiter_ndjson, encode_line
from protocol.ndjson import DecodedLine

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
    for item in _decode(data, cuts, max_line_bytes):
        assert isinstance(item, dict | OversizedLine)


def test_a_malformed_line_is_wrapped_and_the_stream_goes_on() -> None:
    data = b'{"a": 1}\n{oops\n[1, 2]\n"text"\n\n{"b": 2}'
    assert _decode(data, []) == [{"a": 1}, {"raw": "{oops"}, {"raw": "[1, 2]"}, {"raw": '"text"'}, {"b": 2}]


def test_crlf_line_endings_are_accepted() -> None:
    assert _decode(b'{"a": 1}\r\n{"b": 2}\r\n', [3]) == [{"a": 1}, {"b": 2}]


def test_non_utf8_bytes_are_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="protocol.ndjson"):
        out = _decode(b'{"a": "x\xff\xfey"}\n{"b": 1}\n', [5])
    assert out == [{"a": "xy"}, {"b": 1}]
    assert any("not UTF-8" in r.getMessage() for r in caplog.records)


def test_a_multibyte_character_cut_in_two_survives() -> None:
    data = encode_line({"t": "añ€😀"})
    for cut in range(len(data)):
        assert _decode(data, [cut]) == [{"t": "añ€😀"}]


def test_an_oversized_line_is_dropped_without_buffering_it_whole() -> None:
    limit = 1 << 20
    decoder = NDJSONDecoder(max_line_bytes=limit)
    chunk = b"x" * (64 * 1024)
    total = 0
    out: list[DecodedLine] = [*decoder.feed(b'{"before": 1}\n')]
    while total < 50 * 1024 * 1024:
        out += decoder.feed(chunk)
        total += len(chunk)
        assert len(decoder._buffer) <= limit
    out += decoder.feed(b'\n{"after": 2}\n')
    assert out == [{"before": 1}, OversizedLine(size=total, limit=limit), {"after": 2}]


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

    assert [item async for item in aiter_ndjson(chunks())] == [{"a": 1}, {"b": 2}, {"raw": "{bad"}]


@settings(max_examples=50)
@given(st.lists(_objects, min_size=1, max_size=5), st.lists(st.integers(min_value=0), max_size=6))
def test_garbage_between_valid_lines_never_loses_them(objects: list[dict], cuts: list[int]) -> None:
    data = b"\xff\xfe{{\n".join(encode_line(o) for o in objects)
    expected: list[DecodedLine] = []
    for obj in objects:
        expected += [{"raw": "{{"}, obj] if expected else [obj]
    assert _decode(data, cuts) == expected
