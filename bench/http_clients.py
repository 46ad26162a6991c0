"""Which HTTP client the gateway should call agents with: httpx (one pool, several pools), httpx2, aiohttp.

    python -m bench.http_clients [--quick]

The reference Starlette app (bench/_reference_app.py, uvicorn with asyncio and h11) runs in a
subprocess on one core, the clients in this process on the other. Each client makes sync
calls (``POST /json``, the body read and parsed) and reads streams (``POST /stream`` of
``STREAM_LINES`` NDJSON lines, each parsed) at 1, 10, 50 and 200 concurrent callers. Rounds
interleave the clients (their order rotating); the figure printed is the median over rounds,
with its ratio to aiohttp's in the same run.

- ``httpx``: one ``httpx.AsyncClient`` with a pool of 1024 connections (the gateway's old client);
- ``httpx x8``: eight such clients, callers spread over them (several pools, one per peer);
- ``httpx2``: one ``httpx2.AsyncClient`` (installed with the MCP SDK), same pool size;
- ``aiohttp``: one ``aiohttp.ClientSession``, a ``TCPConnector`` of 1024 connections.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import httpx
import httpx2
import orjson

from bench._support import client_core, median, pinning, python, rate, ratio, server_process

STREAM_LINES = 100
CONNECTIONS = 1024
CONCURRENCY = (1, 10, 50, 200)
CLIENTS = ("httpx", "httpx x8", "httpx2", "aiohttp")
_JSON = {"content-type": "application/json"}

Caller = tuple[Callable[[], Any], Callable[[], Any]]


@asynccontextmanager
async def _clients(url: str) -> AsyncIterator[dict[str, Caller]]:
    """Per client: (one sync call, one stream read), each returning how many units it did."""
    async with AsyncExitStack() as stack:
        one = await stack.enter_async_context(_httpx(httpx))
        several = [await stack.enter_async_context(_httpx(httpx)) for _ in range(8)]
        next_pool = itertools.cycle(several).__next__
        two = await stack.enter_async_context(_httpx(httpx2))
        session = await stack.enter_async_context(
            aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=CONNECTIONS), timeout=aiohttp.ClientTimeout(total=None)
            )
        )
        send_body = orjson.dumps({"message": {"parts": [{"text": "hi"}]}})
        stream_body = orjson.dumps({"lines": STREAM_LINES})

        def httpx_pair(pick: Callable[[], Any]) -> Caller:
            async def sync() -> int:
                response = await pick().post(url + "/json", content=send_body, headers=_JSON)
                orjson.loads(response.content)
                return 1

            async def stream() -> int:
                lines = 0
                async with pick().stream("POST", url + "/stream", content=stream_body, headers=_JSON) as response:
                    async for line in response.aiter_lines():
                        if line:
                            orjson.loads(line)
                            lines += 1
                return lines

            return sync, stream

        async def aiohttp_sync() -> int:
            async with session.post(url + "/json", data=send_body, headers=_JSON) as response:
                orjson.loads(await response.read())
            return 1

        async def aiohttp_stream() -> int:
            lines = 0
            async with session.post(url + "/stream", data=stream_body, headers=_JSON) as response:
                async for line in response.content:
                    if line.strip():
                        orjson.loads(line)
                        lines += 1
            return lines

        yield {
            "httpx": httpx_pair(lambda: one),
            "httpx x8": httpx_pair(next_pool),
            "httpx2": httpx_pair(lambda: two),
            "aiohttp": (aiohttp_sync, aiohttp_stream),
        }


def _httpx(module: Any) -> Any:
    limits = module.Limits(max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS)
    return module.AsyncClient(limits=limits, timeout=30.0)


async def measure(url: str, *, quick: bool) -> dict[tuple[str, str, int], float]:
    """Median rate per (what, client, concurrency) over interleaved rounds."""
    rounds = 1 if quick else 3
    seconds = 0.3 if quick else 1.0
    concurrency_levels = (1, 50) if quick else CONCURRENCY
    seen: dict[tuple[str, str, int], list[float]] = {}
    async with _clients(url) as clients:
        for sync, stream in clients.values():
            await rate(sync, concurrency=10, count=50, seconds=1.0)
            await rate(stream, concurrency=4, count=8, seconds=1.0)
        for number in range(rounds):
            order = CLIENTS[number % len(CLIENTS) :] + CLIENTS[: number % len(CLIENTS)]
            for concurrency in concurrency_levels:
                for name in order:
                    sync, stream = clients[name]
                    seen.setdefault(("sync req/s", name, concurrency), []).append(
                        await rate(sync, concurrency=concurrency, count=20_000, seconds=seconds)
                    )
                    seen.setdefault(("stream lines/s", name, concurrency), []).append(
                        await rate(stream, concurrency=concurrency, count=2_000, seconds=seconds)
                    )
    return {key: median(values) for key, values in seen.items()}


def report(figures: dict[tuple[str, str, int], float]) -> str:
    lines = [f"{'measure':<16}{'callers':>8}" + "".join(f"{name:>11}" for name in CLIENTS) + "   (ratio to aiohttp)"]
    keys = sorted({(what, concurrency) for what, _, concurrency in figures}, key=lambda k: (k[0] != "sync req/s", k[1]))
    for what, concurrency in keys:
        reference = figures[(what, "aiohttp", concurrency)]
        values = "".join(f"{figures[(what, name, concurrency)]:>11.0f}" for name in CLIENTS)
        ratios = " ".join(ratio(figures[(what, name, concurrency)], reference) for name in CLIENTS)
        lines.append(f"{what:<16}{concurrency:>8}{values}   ({ratios})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short round at 1 and 50 callers")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, client_core():
        command = python("-m", "bench._reference_app", "{port}")
        with server_process(command, "/ready", Path(tmp) / "server.log") as url:
            print(f"HTTP clients against the reference Starlette app (asyncio, h11); {pinning()}; medians of rounds")
            print(report(anyio.run(lambda: measure(url, quick=args.quick))))


if __name__ == "__main__":
    main()
