"""Shared pieces of the agent-tool tests: the scripted agent served over HTTP and in-process, a
misbehaving A2A server, a silent TCP server, log checks.

Test modules import the fixtures ``scripted_url`` and ``agent`` from here.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from agent_server import create_app
from agent_server.testing import Probe, scripted_agent
from gateway import Gateway
from gateway.recording.events import Event
from tests.support.servers import serve_app

HUGE_LINE_BYTES = 50 * 1024 * 1024
_PIECE = b"x" * (64 * 1024)

PROBE = Probe()
"""What the scripted agent behind ``scripted_url`` and ``agent`` went through (task ids are unique)."""


@pytest.fixture(scope="module")
def scripted_url() -> Iterator[str]:
    """The scripted agent on a loopback port."""
    with serve_app(create_app(scripted_agent(probe=PROBE))) as url:
        yield url


@pytest.fixture(params=["http", "local"])
async def agent(request: pytest.FixtureRequest, scripted_url: str) -> AsyncIterator[tuple[Gateway, str]]:
    """A started gateway and the URI of the scripted agent, remote or in-process."""
    async with Gateway() as gateway:
        if request.param == "http":
            yield gateway, scripted_url
        else:
            yield gateway, gateway.register_local_agent("scripted", scripted_agent(probe=PROBE))


def line(value: dict[str, Any]) -> bytes:
    return orjson.dumps(value) + b"\n"


def status(task_id: str, seq: int, state: str, *, final: bool = False, cost: float | None = None) -> bytes:
    event = {"seq": seq, "id": task_id, "type": "status", "status": {"state": state}, "final": final}
    return line(event if cost is None else {**event, "cost_usd": cost})


def artifact(task_id: str, seq: int, text: str, cost: float = 0.0) -> bytes:
    part = {"type": "text", "text": text}
    return line(
        {"seq": seq, "id": task_id, "type": "artifact", "artifact": {"parts": [part], "append": True}, "cost_usd": cost}
    )


class FaultyAgent:
    """A raw A2A server whose stream misbehaves as the message text says; it records the cancels it gets.

    ``malformed``, ``non_utf8``, ``cut``, ``break``, ``huge``, ``http_error``, ``text_error``,
    ``huge_answer`` (a 50 MB JSON answer to ``tasks/send``), ``legit_raw`` (a JSON object
    ``{"raw": "legit"}`` that is no event), ``text_cost`` / ``negative_cost`` (a line whose
    ``cost_usd`` is ``"free"`` / ``-1``), ``meta:JSON`` (a completed Task with that metadata);
    ``final_cost`` bills $1 on its final line; ``slow_cancel`` and ``failing_cancel`` fall
    silent after two lines and answer a cancel late (after 30 s, or never if the caller hangs up
    first) or with HTTP 500.
    """

    def __init__(self) -> None:
        self.canceled: list[str] = []
        self._commands: dict[str, str] = {}
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
        self._commands[task_id] = command
        if command == "http_error":
            error = {"error": {"code": -32603, "message": "the model provider is down, retry in a minute"}}
            return Response(orjson.dumps(error), status_code=503, media_type="application/json")
        if command == "text_error":
            return Response("upstream exploded", status_code=502, media_type="text/plain")
        if command.startswith("meta:"):
            task = {"id": task_id, "status": {"state": "completed"}, "metadata": orjson.loads(command[5:])}
            return Response(orjson.dumps(task), media_type="application/json")
        if command == "huge_answer":
            return StreamingResponse(self._huge_answer(task_id), media_type="application/json")
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
        elif command == "legit_raw":
            yield line({"raw": "legit"})
            yield status(task_id, 2, "completed", final=True)
        elif command in ("text_cost", "negative_cost"):
            yield artifact(task_id, 2, "costly").replace(
                b'"cost_usd":0.0', b'"cost_usd":' + (b'"free"' if command == "text_cost" else b"-1")
            )
            yield status(task_id, 3, "completed", final=True)
        elif command == "final_cost":
            yield status(task_id, 2, "completed", final=True, cost=1.0)
        elif command in ("slow_cancel", "failing_cancel"):
            await anyio.sleep(30)

    async def _huge_answer(self, task_id: str) -> AsyncIterator[bytes]:
        yield b'{"id": "' + task_id.encode() + b'", "status": {"state": "completed"}, "padding": "'
        for _ in range(HUGE_LINE_BYTES // len(_PIECE)):
            yield _PIECE
        yield b'"}'

    async def _cancel(self, request: Request) -> Response:
        task_id = orjson.loads(await request.body())["id"]
        self.canceled.append(task_id)
        command = self._commands.get(task_id)
        if command == "slow_cancel":
            await _hung_up(request, within_s=30)
        if command == "failing_cancel":
            return Response("cancel is broken", status_code=500, media_type="text/plain")
        task = {"id": task_id, "status": {"state": "canceled"}, "artifacts": []}
        return Response(orjson.dumps(task), media_type="application/json")


async def _hung_up(request: Request, within_s: float) -> None:
    """Return when the client closes the connection, or after ``within_s``.

    A handler that only slept would keep the server's shutdown waiting for it long after its
    caller gave up.
    """
    with anyio.move_on_after(within_s):
        while (await request.receive())["type"] != "http.disconnect":
            pass


@contextmanager
def silent_server(receive_buffer: int | None = None) -> Iterator[str]:
    """A TCP server on loopback that accepts connections and never reads nor answers; yields its URL.

    ``receive_buffer``: the accepted sockets' SO_RCVBUF, so that a large request fills it and
    its sender's writes block.
    """
    listener = socket.socket()
    if receive_buffer is not None:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
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


@contextmanager
def finalized_async_generators() -> Iterator[list[str]]:
    """Names of the async generators that asyncio's GC finalizer had to close while the block ran.

    A generator closed by its owner (``contextlib.aclosing``) never reaches the finalizer; one
    left suspended does, and asyncio then spawns a stray ``aclose()`` task for it.
    """
    firstiter, finalizer = sys.get_asyncgen_hooks()
    finalized: list[str] = []

    def spy(agen: Any) -> None:
        if agen.ag_frame is not None:  # started and not finished
            finalized.append(agen.__name__)
        if finalizer is not None:
            finalizer(agen)

    sys.set_asyncgen_hooks(firstiter=firstiter, finalizer=spy)
    try:
        yield finalized
    finally:
        sys.set_asyncgen_hooks(firstiter=firstiter, finalizer=finalizer)
