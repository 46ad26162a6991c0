"""NDJSON: one JSON value per line. An encoder, and a decoder fed bytes cut anywhere.

The decoder never raises on bad input: a line that is not a JSON object comes out as
``{"raw": "<the line>"}``, bytes that are not UTF-8 are dropped with a logged warning,
and a line longer than ``max_line_bytes`` is dropped as it streams by (never buffered
whole) and reported as one ``OversizedLine``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel

logger = logging.getLogger(__name__)

MEDIA_TYPE = "application/x-ndjson"
DEFAULT_MAX_LINE_BYTES = 1 << 20


def encode_line(value: Any) -> bytes:
    """One NDJSON line. Pydantic models are written in their wire (camelCase) form."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return orjson.dumps(value) + b"\n"


@dataclass(frozen=True)
class OversizedLine:
    """A line longer than the limit; its bytes were discarded."""

    size: int
    limit: int


DecodedLine = dict[str, Any] | OversizedLine


class NDJSONDecoder:
    """Incremental decoder: ``feed`` bytes as they arrive, ``close`` at end of stream."""

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self.max_line_bytes = max_line_bytes
        self._buffer = bytearray()
        self._skipping = 0  # bytes dropped so far of the current oversized line

    def feed(self, data: bytes) -> list[DecodedLine]:
        out: list[DecodedLine] = []
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                self._take(data[start:], out)
                return out
            self._take(data[start:newline], out)
            self._end_line(out)
            start = newline + 1

    def close(self) -> list[DecodedLine]:
        """Flush a last line that had no newline."""
        out: list[DecodedLine] = []
        self._end_line(out)
        return out

    def _take(self, piece: bytes, out: list[DecodedLine]) -> None:
        if self._skipping:
            self._skipping += len(piece)
            return
        if len(self._buffer) + len(piece) > self.max_line_bytes:
            self._skipping = len(self._buffer) + len(piece)
            self._buffer = bytearray()
            return
        self._buffer += piece

    def _end_line(self, out: list[DecodedLine]) -> None:
        if self._skipping:
            logger.warning("dropped an NDJSON line of %d bytes (limit %d)", self._skipping, self.max_line_bytes)
            out.append(OversizedLine(size=self._skipping, limit=self.max_line_bytes))
            self._skipping = 0
            return
        line = bytes(self._buffer)
        self._buffer = bytearray()
        decoded = _decode_line(line)
        if decoded is not None:
            out.append(decoded)


def _decode_line(line: bytes) -> dict[str, Any] | None:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        text = line.decode("utf-8", errors="ignore")
        logger.warning("skipped %d bytes that are not UTF-8 in an NDJSON line", len(line) - len(text.encode()))
    text = text.strip()
    if not text:
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {"raw": text}
    return value if isinstance(value, dict) else {"raw": text}


async def aiter_ndjson(
    chunks: AsyncIterable[bytes], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> AsyncIterator[DecodedLine]:
    """Decode an async byte stream (e.g. ``response.aiter_raw()``) into lines as they complete."""
    decoder = NDJSONDecoder(max_line_bytes)
    async for chunk in chunks:
        for item in decoder.feed(chunk):
            yield item
    for item in decoder.close():
        yield item
