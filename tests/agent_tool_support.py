"""Shared pieces of the agent-tool tests: a misbehaving A2A server, a silent TCP server, log checks."""

from __future__ import annotations

import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from gateway import Gateway
from gateway.events import Event

HUGE_LINE_BYTES = 50 * 1024 * 1024
_PIECE = b"x" * (64 * 1024)


def line(value: dict[str, Any]) -> bytes:
    return orjson.dumps(value) + b"\n"


def status(task_id: str, seq: int, state: str, *, final: bool = False) -> bytes:
    return line({"seq": seq, "id": task_id, "type": "status", "status": {"state": state}, "final": final})


def artifact(task_id: str, seq: int, text: str, cost: float = 0.0) -> bytes:
    part = {"type": "text", "text": text}
    return line({"seq": seq, "id": task_id, "type": "artifact", "artifact": {"parts": [part], "append": True}, "cost_usd": cost})


class FaultyAgent:
    """A raw A2A server whose stream misbehaves as the message text says; it records the cancels it gets.

    ``malformed``, ``non_utf8``, ``cut``, ``break``, ``huge``, ``http_error``, ``text_error``.
    """

    def __init__(self) -> None:
        self.canceled: list[str] = []
        self.app = Starlette(
            routes=[
                Route("/tasks/sendSubscribe", self._subscribe, methods=["POST"]),
                Route("/tasks/send", self._subscribe, methods=["POST"]),
                Route("/tasks/cancel", self._cancel, methods=["POST"]),
            ]
        )

    async def _subscribe(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        task_id = body["id"]
        command = body["message"]["parts"][0]["text"]
        if command == "http_error":
            error = {"error": {"code": -32603, "message": "the model provider is down, retry in a minute"}}
            return Response(orjson.dumps(error), status_code=503, media_type="application/json")
        if command == "text_error":
            return Response("upstream exploded", status_code=502, media_type="text/plain")
        return StreamingResponse(self._lines(task_id, command), media_type="application/x-ndjson")

    async def _lines(self, task_id: str, command: str) -> AsyncIterator[bytes]:
        yield status(task_id, 0, "working")
        yield artifact(task_id, 1, "partial ", cost=0.001)
        if command == "malformed":
            yield b'{"seq": 2, "this is not json\n'
            yield artifact(task_id, 3, "rest")
            yield status(task_id, 4, "completed", final=True)
        elif command == "non_utf8":
            yield artifact(task_id, 2, "ab\u00ffcd").replace("\u00ff".encode(), b"\xff\xfe")
            yield status(task_id, 3, "completed", final=True)
        elif command == "cut":
            return
        elif command == "break":
            await anyio.sleep(0.05)
            raise RuntimeError("the agent server crashed mid-stream")
        elif command == "huge":
            for _ in range(HUGE_LINE_BYTES // len(_PIECE)):
                yield _PIECE
            yield b"\n" + status(task_id, 3, "completed", final=True)

    async def _cancel(self, request: Request) -> Response:
        task_id = orjson.loads(await request.body())["id"]
        self.canceled.append(task_id)
        task = {"id": task_id, "status": {"state": "canceled"}, "artifacts": []}
        return Response(orjson.dumps(task), media_type="application/json")


@contextmanager
def silent_server() -> Iterator[str]:
    """A TCP server on loopback that accepts connections, reads, and never answers; yields its URL."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.05)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=accept, name="silent-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=2)
        listener.close()
        for conn in held:
            conn.close()


async def call_events(gateway: Gateway, run_id: str) -> list[Event]:
    """The run's events, checked for what every agent-tool event carries."""
    events = await gateway.event_log.read(run_id)
    assert [e.seq for e in events] == list(range(len(events))), "seq counts from 0 without gaps"
    call_ids = {e.fields["call_id"] for e in events}
    assert len(call_ids) == 1, call_ids
    for event in events:
        assert event.type.startswith("agent_tool_")
        assert event.timestamp_ms > 0
        assert {"call_id", "tool", "agent"} <= set(event.fields)
    assert events[0].type == "agent_tool_invoked"
    return events


def types_of(events: list[Event]) -> list[str]:
    return [e.type.removeprefix("agent_tool_") for e in events]


def progress_texts(events: list[Event]) -> list[str]:
    return [e.fields["text"] for e in events if e.type == "agent_tool_progress" and "text" in e.fields]
