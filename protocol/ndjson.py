"""NDJSON: one JSON value per line. An encoder, and a decoder fed bytes cut anywhere.

The decoder never raises on bad input and does no I/O (no logging): it returns what it
saw, for the caller to log or record.

- A line that is a JSON object comes out as that ``dict``.
- A line that is not a JSON object (malformed JSON, an array, a string...) comes out as
  ``MalformedLine(text)``: a distinct type, so a legitimate ``{"raw": ...}`` object is
  never mistaken for a malformed line.
- Bytes that are not UTF-8 are dropped from their line; a ``SkippedBytes(count)`` item
  comes right before what the rest of that line decoded to.
- A line longer than ``max_line_bytes`` (newline excluded) is reported as one
  ``OversizedLine`` as soon as the limit is crossed (in the ``feed`` call whose bytes
  cross it, never buffered whole); the rest of that line is dropped up to its newline,
  and decoding goes on with the next line.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel

MEDIA_TYPE = "application/x-ndjson"
DEFAULT_MAX_LINE_BYTES = 1 << 20


def encode_line(value: Any) -> bytes:
    """One NDJSON line. Pydantic models are written in their wire (camelCase) form."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return orjson.dumps(value) + b"\n"


@dataclass(frozen=True)
class OversizedLine:
    """A line longer than ``limit`` bytes; ``size`` is how much of it had arrived when the limit was crossed.

    Reported once per line, as soon as the limit is crossed; its bytes are discarded.
    """

    size: int
    limit: int


@dataclass(frozen=True)
class MalformedLine:
    """A non-empty line that is not a JSON object (``text``: the line, stripped, as UTF-8)."""

    text: str


@dataclass(frozen=True)
class SkippedBytes:
    """``count`` bytes that are not UTF-8 were dropped from the line decoded next."""

    count: int


DecodedLine = dict[str, Any] | MalformedLine | OversizedLine | SkippedBytes


class NDJSONDecoder:
    """Incremental decoder: ``feed`` bytes as they arrive, ``close`` at end of stream."""

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._skipping = False  # the current line went over the limit (already reported): drop to its newline

    def feed(self, data: bytes) -> list[DecodedLine]:
        out: list[DecodedLine] = []
        if self._buffer or self._skipping:  # the end of a line begun before: through the buffer
            newline = data.find(b"\n")
            if newline < 0:
                self._take(data, out)
                return out
            self._take(data[:newline], out)
            self._end_line(out)
            data = data[newline + 1 :]
        # The whole lines within ``data``, each parsed from its own slice (one split for them all, not a search
        # and a slice each); the piece after the last newline starts the next line.
        *lines, rest = data.split(b"\n")
        limit = self.max_line_bytes
        for line in lines:
            if len(line) > limit:
                out.append(OversizedLine(size=len(line), limit=limit))
                continue
            try:  # the common case, a JSON object in UTF-8 (orjson checks the UTF-8)
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                value = None
            if type(value) is dict:
                out.append(value)
            else:
                _decode_line(line, out)
        self._take(rest, out)
        return out

    def close(self) -> list[DecodedLine]:
        """Flush a last line that had no newline."""
        out: list[DecodedLine] = []
        self._end_line(out)
        return out

    def _take(self, piece: bytes, out: list[DecodedLine]) -> None:
        if self._skipping or not piece:
            return
        size = len(self._buffer) + len(piece)
        if size > self.max_line_bytes:
            out.append(OversizedLine(size=size, limit=self.max_line_bytes))
            self._skipping = True
            self._buffer = bytearray()
            return
        self._buffer += piece

    def _end_line(self, out: list[DecodedLine]) -> None:
        if self._skipping:
            self._skipping = False
            return
        line = bytes(self._buffer)
        self._buffer = bytearray()
        _decode_line(line, out)


def _decode_line(line: bytes, out: list[DecodedLine]) -> None:
    try:  # the common case, a JSON object in UTF-8, parsed straight from the bytes (orjson checks the UTF-8)
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        pass
    else:
        if isinstance(value, dict):
            out.append(value)
            return
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        text = line.decode("utf-8", errors="ignore")
        out.append(SkippedBytes(count=len(line) - len(text.encode())))
    text = text.strip()
    if not text:
        return
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        out.append(MalformedLine(text))
        return
    out.append(value if isinstance(value, dict) else MalformedLine(text))


async def aiter_ndjson(
    chunks: AsyncIterable[bytes], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> AsyncGenerator[DecodedLine, None]:
    """Decode an async byte stream (e.g. ``response.aiter_raw()``) into lines as they complete.

    It does not close ``chunks``: its owner does (``contextlib.aclosing``).
    """
    decoder = NDJSONDecoder(max_line_bytes)
    async for chunk in chunks:
        for item in decoder.feed(chunk):
            yield item
    for item in decoder.close():
        yield item
