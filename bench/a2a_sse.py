"""Standard A2A streaming: Switchboard's SSE against the a2a-sdk server's, and against Switchboard's own NDJSON.

    python -m bench.a2a_sse [--quick]

The same streaming agent (a message ``N`` makes N text chunks, at once) is served twice, each
server in its own subprocess on one core (the client on the other, where there are two):
by ``agent_server`` (one app, both bindings) and by the a2a-sdk 1.3 server (its
DefaultRequestHandler, in-memory task store, JSON-RPC routes). One client reads every
stream the same way: a pooled httpx client, the bytes fed to ``protocol.sse.SSEDecoder`` (or
``NDJSONDecoder``), each event's JSON parsed. Three paths:

- ``switchboard sse``: ``SendStreamingMessage`` (A2A-Version 1.0) to the agent server;
- ``sdk sse``: the same request to the a2a-sdk server;
- ``switchboard ndjson``: ``/tasks/sendSubscribe`` to the agent server.

Each round measures every path (the order rotates from round to round), at a few streams at
once, for a bounded time and count; the report gives each path's median events/s and the
ratios switchboard-sse / sdk-sse and switchboard-sse / switchboard-ndjson, round by round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import anyio
import httpx
import orjson

from agent_server.http.loopback import free_port
from bench._chunks import Settings, chunks_agent
from bench._support import rate, stop, wait_ready
from protocol import NDJSONDecoder, SSEDecoder, SSEEvent

CHUNKS = 200
CONCURRENCY = 4
PATHS = ("switchboard sse", "sdk sse", "switchboard ndjson")


# -- the servers (run in subprocesses: python -m bench.a2a_sse --serve KIND PORT) -----------------


def _serve_switchboard(port: int) -> None:
    from agent_server import serve

    serve(chunks_agent(), port=port, log_level="warning")


def _serve_sdk(port: int) -> None:
    import uvicorn
    from a2a.helpers.proto_helpers import new_task_from_user_message
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
    from starlette.applications import Starlette

    class Chunks(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            if context.task_id is None or context.context_id is None or context.message is None:
                raise RuntimeError("the SDK hands every execution a task, a context and a message")
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
            updater = TaskUpdater(event_queue, context.task_id, context.context_id)
            await updater.start_work()
            for index in range(int(context.get_user_input())):
                await updater.add_artifact([Part(text=f"chunk-{index} ")], artifact_id="out", append=index > 0)
            await updater.complete()

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            raise NotImplementedError

    url = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name="chunks",
        description="N chunks at once.",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="chunks", name="chunks", description="N chunks at once.", tags=["bench"])],
    )
    handler = DefaultRequestHandler(agent_executor=Chunks(), task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", http="h11")  # the agent server's parser


@contextmanager
def _server(kind: str, cores: set[int] | None) -> Iterator[str]:
    """One server in a subprocess pinned to ``cores``; yields its URL once its card answers."""
    port = free_port()

    def place() -> None:
        if cores:
            os.sched_setaffinity(0, cores)

    command = [sys.executable, "-m", "bench.a2a_sse", "--serve", kind, str(port)]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, preexec_fn=place)  # noqa: PLW1509 - no threads yet
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url + "/.well-known/agent-card.json", process, f"the {kind} server")
        yield url
    finally:
        stop(process)


# -- the one client -----------------------------------------------------------------------------


def _sse_body(count: int) -> bytes:
    message = {"messageId": os.urandom(8).hex(), "role": "ROLE_USER", "parts": [{"text": str(count)}]}
    return orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": message}})


def _ndjson_body(count: int) -> bytes:
    return orjson.dumps({"message": {"role": "user", "parts": [{"type": "text", "text": str(count)}]}})


async def read_sse(client: httpx.AsyncClient, url: str, chunks: int) -> int:
    """One SSE stream read to its end: how many events, each parsed as JSON and checked to be a result."""
    headers = {"content-type": "application/json", "accept": "text/event-stream", "A2A-Version": "1.0"}
    decoder = SSEDecoder()
    events = 0
    async with client.stream("POST", url + "/", content=_sse_body(chunks), headers=headers) as response:
        async for chunk in response.aiter_raw():
            for event in decoder.feed(chunk):
                assert isinstance(event, SSEEvent)
                if "result" not in orjson.loads(event.data):
                    raise RuntimeError(f"an error event: {event.data[:200]}")
                events += 1
    return events


async def read_ndjson(client: httpx.AsyncClient, url: str, chunks: int) -> int:
    headers = {"content-type": "application/json", "accept": "application/x-ndjson"}
    decoder = NDJSONDecoder()
    events = 0
    async with client.stream(
        "POST", url + "/tasks/sendSubscribe", content=_ndjson_body(chunks), headers=headers
    ) as response:
        async for chunk in response.aiter_raw():
            for line in decoder.feed(chunk):
                if not isinstance(line, dict):
                    raise RuntimeError(f"a line that is not an event: {line!r}")
                events += 1
    return events


async def measure(settings: Settings, switchboard: str, sdk: str, out: Callable[[str], None]) -> dict[str, list[float]]:
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    rates: dict[str, list[float]] = {path: [] for path in PATHS}
    async with httpx.AsyncClient(limits=limits, timeout=60.0) as client:
        ops: dict[str, Callable[[], Awaitable[int]]] = {
            "switchboard sse": lambda: read_sse(client, switchboard, CHUNKS),
            "sdk sse": lambda: read_sse(client, sdk, CHUNKS),
            "switchboard ndjson": lambda: read_ndjson(client, switchboard, CHUNKS),
        }
        for path in PATHS:  # warm-up, and a check that each path streams every chunk
            events = await ops[path]()
            if events < CHUNKS:
                raise RuntimeError(f"{path}: {events} events for {CHUNKS} chunks")
        for round_ in range(settings.rounds):
            order = PATHS[round_ % len(PATHS) :] + PATHS[: round_ % len(PATHS)]
            for path in order:
                rates[path].append(
                    await rate(ops[path], concurrency=CONCURRENCY, count=settings.streams, seconds=settings.seconds)
                )
            sse = rates["switchboard sse"][-1]
            out(
                f"round {round_ + 1}: "
                + "  ".join(f"{path} {rates[path][-1]:8.0f}/s" for path in PATHS)
                + f"  sse/sdk {sse / rates['sdk sse'][-1]:.2f}  sse/ndjson {sse / rates['switchboard ndjson'][-1]:.2f}"
            )
    return rates


def report(rates: dict[str, list[float]]) -> str:
    median = {path: statistics.median(values) for path, values in rates.items()}
    ratios_sdk = [a / b for a, b in zip(rates["switchboard sse"], rates["sdk sse"], strict=True)]
    ratios_ndjson = [a / b for a, b in zip(rates["switchboard sse"], rates["switchboard ndjson"], strict=True)]
    lines = [f"{path:<20} median {median[path]:8.0f} events/s" for path in PATHS]
    lines.append(f"ratio switchboard sse / sdk sse:           median {statistics.median(ratios_sdk):.2f}")
    lines.append(f"ratio switchboard sse / switchboard ndjson: median {statistics.median(ratios_ndjson):.2f}")
    return "\n".join(lines)


@contextmanager
def _pinned() -> Iterator[set[int] | None]:
    """This process on the last core, the servers on the first (where there are two); restored at the end."""
    affinity = os.sched_getaffinity(0)
    cores = sorted(affinity)
    if len(cores) < 2:
        yield None
        return
    os.sched_setaffinity(0, {cores[-1]})
    try:
        yield {cores[0]}
    finally:
        os.sched_setaffinity(0, affinity)


def settings_for(quick: bool) -> Settings:
    return Settings(rounds=2, seconds=0.5, streams=20) if quick else Settings(rounds=6, seconds=3.0, streams=400)


def run(settings: Settings, out: Callable[[str], None] = print) -> dict[str, list[float]]:
    with (
        _pinned() as server_cores,
        _server("switchboard", server_cores) as switchboard,
        _server("sdk", server_cores) as sdk,
    ):
        out(f"{CHUNKS} chunks per stream, {CONCURRENCY} streams at once; servers on cores {server_cores or 'any'}")
        return anyio.run(measure, settings, switchboard, sdk, out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two short rounds")
    parser.add_argument("--serve", nargs=2, metavar=("KIND", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        kind, port = args.serve
        (_serve_switchboard if kind == "switchboard" else _serve_sdk)(int(port))
        return
    print(report(run(settings_for(args.quick))))


if __name__ == "__main__":
    main()
