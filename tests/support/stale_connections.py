"""An A2A-NDJSON agent on raw sockets that keeps each connection open after its answer but never answers on it again.

That is what a client meets when it writes a request on a pooled connection the server has
just closed (its keep-alive ran out while the request was on its way), made deterministic: the
second request on a connection is read and dropped, and the connection closed, with no answer.
``answer_status`` makes every ``/tasks/send`` answer with that status instead (a 500, say).
``requests`` counts the requests that got an answer, ``dropped`` those closed unanswered.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import orjson

from agent_server.http.loopback import free_port
from protocol import NDJSON_BINDING, AgentCard

_READ_S = 10.0


@dataclass
class StaleServer:
    url: str
    answer_status: int = 200
    requests: int = 0
    dropped: int = 0


def _card(url: str) -> bytes:
    card = AgentCard.standard(name="stale", url=url, description="Answers once per connection.")
    card.supported_interfaces = [i for i in card.supported_interfaces if i.protocol_binding == NDJSON_BINDING]
    return orjson.dumps(card.to_wire())


async def _request(reader: asyncio.StreamReader) -> tuple[str, bytes] | None:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_S)
    lines = head.decode("latin-1").split("\r\n")
    length = next((int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:")), 0)
    body = await asyncio.wait_for(reader.readexactly(length), _READ_S) if length else b""
    return lines[0].split(" ")[1], body


def _answer(status: int, body: bytes) -> bytes:
    head = f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    return head.encode() + body


@contextmanager
def stale_server() -> Iterator[StaleServer]:
    """The server on a loopback port, in a thread of its own, for the block."""
    port = free_port()
    state = StaleServer(f"http://127.0.0.1:{port}")
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop: asyncio.Event | None = None

    handlers: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.add(asyncio.current_task())  # type: ignore[arg-type]
        try:
            path, body = await _request(reader) or ("", b"")
            state.requests += 1  # counted before the answer leaves: the test may read it as soon as that arrives
            if path.startswith("/.well-known/"):
                writer.write(_answer(200, _card(state.url)))
            else:
                sent = orjson.loads(body)
                task = {
                    "id": sent["id"],
                    "sessionId": sent.get("sessionId"),
                    "status": {"state": "completed"},
                    "artifacts": [{"index": 0, "parts": sent["message"]["parts"]}],
                }
                writer.write(_answer(state.answer_status, orjson.dumps(task)))
            await writer.drain()
            await _request(reader)  # the next request on this connection: read, never answered
            state.dropped += 1
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def serve() -> None:
        nonlocal stop
        stop = asyncio.Event()
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        ready.set()
        async with server:
            await stop.wait()
        for handler in handlers:
            handler.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    if not ready.wait(_READ_S):
        raise RuntimeError("the stale-connection server did not start")
    try:
        yield state
    finally:
        assert stop is not None
        loop.call_soon_threadsafe(stop.set)
        thread.join(_READ_S)
        loop.close()
