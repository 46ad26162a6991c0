"""Agent-as-tool overhead: the gateway against the same calls made directly with httpx.

    python -m bench.agent_tool [--quick]

One agent server (agent_server's scripted agent) runs in a subprocess on loopback. In one
run this measures sync calls per second (``/tasks/send``) and streamed chunks per second
(``/tasks/sendSubscribe``), each through the gateway (events recorded in the memory log)
and directly (one pooled httpx client, the Task or each stream event parsed), at several
concurrency levels, and prints the gateway/direct ratios. Every loop is bounded both in
count and in time.

Sync calls are also made directly with a client per worker (no shared pool) and through
one client capped at ``CAPPED_CONNECTIONS`` connections: against the shared 100-connection
pool, they show what the pool itself costs under concurrency (encode/httpx#3215).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import anyio
import httpx
import orjson

from agent_server.http.loopback import free_port
from bench._support import rate, stop, wait_ready
from gateway import Gateway, PeerLimits, SQLiteEventLog
from protocol import NDJSONDecoder, Task, parse_stream_event

_SERVER = (
    "from agent_server import serve; from agent_server.testing import scripted_agent; "
    "import sys; serve(scripted_agent(), port=int(sys.argv[1]), log_level='warning')"
)
STREAM_CHUNKS = 200
POOL_CONNECTIONS = 100
CAPPED_CONNECTIONS = 10


@dataclass(frozen=True)
class Figure:
    what: str
    concurrency: int
    gateway_per_s: float
    direct_per_s: float
    unpooled_per_s: float | None = None
    capped_per_s: float | None = None

    @property
    def ratio(self) -> float:
        return self.gateway_per_s / self.direct_per_s if self.direct_per_s else 0.0


@contextmanager
def agent_server() -> Iterator[str]:
    """The scripted agent served by uvicorn in a subprocess on 127.0.0.1; yields its URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", _SERVER, str(port)], env=os.environ.copy())
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url + "/.well-known/agent.json", process, "the agent server")
        yield url
    finally:
        stop(process)


async def run(url: str, *, quick: bool, tmp_dir: str) -> list[Figure]:
    seconds = 1.0 if quick else 3.0
    sync_count = 300 if quick else 3000
    stream_count = 10 if quick else 100
    figures: list[Figure] = []
    async with (
        Gateway(limits=PeerLimits(max_connections=POOL_CONNECTIONS)) as gateway,
        Gateway(SQLiteEventLog(os.path.join(tmp_dir, "events.db"))) as durable,
        _client(POOL_CONNECTIONS) as direct,
        _client(CAPPED_CONNECTIONS) as capped,
    ):
        gateway.add_agent_tool("echo", url)
        gateway.add_agent_tool("stream", url, mode="streaming")
        durable.add_agent_tool("stream", url, mode="streaming")
        send_body = _message_body("echo hi")
        stream_text = f"stream {STREAM_CHUNKS} 0 0"
        stream_body = _message_body(stream_text)

        async def gateway_sync() -> int:
            await gateway.call_tool("echo", "echo hi")
            return 1

        async def direct_sync(client: httpx.AsyncClient = direct) -> int:
            response = await client.post(
                url + "/tasks/send", content=send_body, headers={"content-type": "application/json"}
            )
            Task.model_validate(orjson.loads(response.content))
            return 1

        async def capped_sync() -> int:
            return await direct_sync(capped)

        async def unpooled_sync(concurrency: int) -> float:
            """Direct calls with one client per worker: no shared pool to contend for."""
            clients = [httpx.AsyncClient(timeout=30.0) for _ in range(concurrency)]
            free = list(clients)

            async def op() -> int:
                client = free.pop()
                try:
                    return await direct_sync(client)
                finally:
                    free.append(client)

            try:
                return await rate(op, concurrency=concurrency, count=sync_count, seconds=seconds)
            finally:
                for client in clients:
                    await client.aclose()

        async def durable_stream() -> int:
            return (await durable.call_tool("stream", stream_text)).chunks

        async def gateway_stream() -> int:
            return (await gateway.call_tool("stream", stream_text)).chunks

        async def direct_stream() -> int:
            lines = 0
            decoder = NDJSONDecoder()
            request = direct.build_request(
                "POST", url + "/tasks/sendSubscribe", content=stream_body, headers={"content-type": "application/json"}
            )
            response = await direct.send(request, stream=True)
            try:
                async for chunk in response.aiter_raw():
                    for line in decoder.feed(chunk):
                        parse_stream_event(line)
                        lines += 1
            finally:
                await response.aclose()
            return lines - 1

        async def compare(
            what: str, through: Op, concurrency: int, count: int, direct_op: Op = direct_stream
        ) -> Figure:
            return Figure(
                what,
                concurrency,
                await rate(through, concurrency=concurrency, count=count, seconds=seconds),
                await rate(direct_op, concurrency=concurrency, count=count, seconds=seconds),
            )

        for op in (gateway_sync, direct_sync, gateway_stream, direct_stream):
            await rate(op, concurrency=4, count=20, seconds=1.0)
        for concurrency in (1, 10, 50):
            figure = await compare("sync calls/s", gateway_sync, concurrency, sync_count, direct_sync)
            figures.append(
                replace(
                    figure,
                    unpooled_per_s=await unpooled_sync(concurrency),
                    capped_per_s=await rate(capped_sync, concurrency=concurrency, count=sync_count, seconds=seconds),
                )
            )
        for concurrency in (1, 10):
            figures.append(await compare("streamed chunks/s", gateway_stream, concurrency, stream_count))
        figures.append(await compare("chunks/s sqlite log", durable_stream, 1, stream_count))
    return figures


Op = Callable[[], Awaitable[int]]


def _client(max_connections: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    return httpx.AsyncClient(limits=limits, timeout=30.0)


def _message_body(text: str) -> bytes:
    return orjson.dumps({"message": {"role": "user", "parts": [{"type": "text", "text": text}]}})


def report(figures: list[Figure]) -> str:
    lines = [
        f"{'measure':<22}{'conc':>5}{'gateway/s':>11}{'direct/s':>10}{'ratio':>7}"
        f"{'direct, client/worker':>23}{f'direct, {CAPPED_CONNECTIONS} conns':>17}"
    ]
    for f in figures:
        extra = "".join(
            f"{value:>{width}.0f}" for value, width in ((f.unpooled_per_s, 23), (f.capped_per_s, 17)) if value
        )
        lines.append(
            f"{f.what:<22}{f.concurrency:>5}{f.gateway_per_s:>11.0f}{f.direct_per_s:>10.0f}{f.ratio:>7.2f}{extra}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs (about 1 s per figure)")
    args = parser.parse_args(argv)
    with agent_server() as url, tempfile.TemporaryDirectory() as tmp_dir:
        print(f"agent-tool bench against {url} (server in a subprocess; ratio = gateway / direct httpx)")
        print(report(anyio.run(lambda: run(url, quick=args.quick, tmp_dir=tmp_dir))))


if __name__ == "__main__":
    main()
