"""Server-Sent Events: an encoder, and a decoder fed bytes cut anywhere (the streams of the JSON-RPC binding).

An event is its ``data:`` lines joined by newlines, dispatched by the blank line that ends
it; ``event:`` names it (``message`` when absent); comments (``:``), ``id:`` and ``retry:``
are read and ignored. Lines end with ``\\n`` or ``\\r\\n``. Like the NDJSON decoder, this one
never raises and does no I/O:

- a complete event comes out as ``SSEEvent(name, data)``, its bytes decoded as UTF-8 (bytes
  that are not UTF-8 become U+FFFD, so the JSON inside fails to parse where it matters);
- an event whose data grows past ``max_event_bytes`` (its lines, or a line still arriving,
  never buffered whole) is reported once as ``OversizedEvent`` as soon as the limit is
  crossed, and the rest of it is dropped up to its blank line;
- an event cut off by the end of the stream (no blank line after it) is not dispatched, as
  the SSE format says.
"""

from __future__ import annotations

from dataclasses import dataclass

MEDIA_TYPE = "text/event-stream"
DEFAULT_MAX_EVENT_BYTES = 1 << 20


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event: its ``name`` (``message`` unless an ``event:`` line said otherwise) and ``data``."""

    name: str
    data: str


@dataclass(frozen=True)
class OversizedEvent:
    """An event longer than ``limit`` bytes; ``size`` is how much of it had arrived when the limit was crossed."""

    size: int
    limit: int


SSEItem = SSEEvent | OversizedEvent


def encode_event(data: bytes, name: str | None = None) -> bytes:
    """One event holding ``data`` (each of its lines a ``data:`` line), named ``name`` when given."""
    head = b"event: " + name.encode() + b"\n" if name else b""
    if b"\n" not in data and b"\r" not in data:  # one line (JSON as it is written): no split
        return head + b"data: " + data + b"\n\n"
    lines = data.replace(b"\r\n", b"\n").split(b"\n")
    return head + b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"


class SSEDecoder:
    """Feed it the bytes of a stream as they arrive; each ``feed`` returns the items completed by them."""

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        if max_event_bytes < 1:
            raise ValueError("max_event_bytes must be at least 1")
        self.max_event_bytes = max_event_bytes
        self._line = bytearray()
        self._line_dropped = False  # bytes of the line in progress were dropped, so it is not blank
        self._data: list[bytes] = []
        self._size = 0
        self._name = ""
        self._dropping = False

    def feed(self, chunk: bytes | bytearray) -> list[SSEItem]:
        out: list[SSEItem] = []
        start = 0
        while True:
            if not self._line and not self._data and not self._name and not self._dropping:
                start = self._simple_events(chunk, start, out)
            end = chunk.find(b"\n", start)
            if end < 0:
                break
            piece = chunk[start:end]
            if self._line:
                self._line += piece
                piece = bytes(self._line)
                self._line.clear()
            self._end_line(bytes(piece), out)
            start = end + 1
        rest = chunk[start:]
        if rest:
            if self._dropping:
                self._line_dropped = True
            else:
                self._line += rest
                self._check_size(len(self._line), out)
        return out

    def _simple_events(self, chunk: bytes | bytearray, start: int, out: list[SSEItem]) -> int:
        """The events from ``start`` (a line's start, between events) that are one ``data: `` line and the blank
        line after it, the form JSON over SSE takes, dispatched without going line by line; where the next
        one is not (another field, a ``\\r``, a cut, an event over the limit), the offset to go on from."""
        limit = self.max_event_bytes
        while chunk.startswith(b"data: ", start):
            end = chunk.find(b"\n", start)
            if end < 0 or not chunk.startswith(b"\n", end + 1) or chunk.startswith(b"\r", end - 1):
                break
            value = chunk[start + 6 : end]
            if len(value) >= limit:
                break
            out.append(SSEEvent(name="message", data=value.decode("utf-8", errors="replace")))
            start = end + 2
        return start

    def close(self) -> list[SSEItem]:
        """The end of the stream: an event without its blank line is dropped, as the format says."""
        self._line.clear()
        self._reset()
        return []

    def _end_line(self, line: bytes, out: list[SSEItem]) -> None:
        dropped, self._line_dropped = self._line_dropped, False
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line and not dropped:
            self._dispatch(out)
            return
        if self._dropping or not line or line.startswith(b":"):
            return
        field, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if field == b"data":
            self._data.append(value)
            self._size += len(value) + 1
            self._check_size(0, out)
        elif field == b"event":
            self._name = value.decode("utf-8", errors="replace")

    def _check_size(self, pending: int, out: list[SSEItem]) -> None:
        size = self._size + pending
        if size > self.max_event_bytes:
            out.append(OversizedEvent(size=size, limit=self.max_event_bytes))
            self._line_dropped = bool(self._line)
            self._line.clear()
            self._data = []
            self._size = 0
            self._dropping = True

    def _dispatch(self, out: list[SSEItem]) -> None:
        if self._data and not self._dropping:
            data = b"\n".join(self._data).decode("utf-8", errors="replace")
            out.append(SSEEvent(name=self._name or "message", data=data))
        self._reset()

    def _reset(self) -> None:
        self._data = []
        self._size = 0
        self._name = ""
        self._dropping = False
