"""The least a relay on the gateway's stack does: Starlette on uvicorn, aiohttp to the agent, lines passed through.

    python -m bench._reference_relay PORT AGENT_URL[,AGENT_URL...] [h11|httptools] [BACKLOG]

``POST /relay`` sends its body unchanged to the (first) agent server's ``/tasks/sendSubscribe``
and answers that stream's lines as they come: no run, no event log, no recording, no logging,
no middleware. ``POST /relay/{i}`` does the same with the i-th agent server, so a burst can be
spread over several, as the gateway's tools are. uvicorn caps no connections; ``BACKLOG`` is
its listen backlog (default uvicorn's), for bursts larger than that. It runs as the gateway does
(h11 unless told, on uvloop when it is installed, else asyncio; ``run_server``'s collector
settings), so what the gateway spends beyond it on a stream is the gateway's own work.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from agent_server.http.limits import MIN_LISTEN_BACKLOG
from agent_server.http.server import run_server
from agent_server.http.speedups import DEFAULT_HTTP

_JSON = {"content-type": "application/json"}


def _app(agent_urls: list[str]) -> Starlette:
    session: aiohttp.ClientSession | None = None

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        nonlocal session
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as session:
            yield

    async def relay(request: Request) -> Response:
        assert session is not None
        body = await request.body()
        agent_url = agent_urls[request.path_params.get("agent", 0)]

        async def lines() -> AsyncIterator[bytes]:
            assert session is not None
            async with session.post(f"{agent_url}/tasks/sendSubscribe", data=body, headers=_JSON) as response:
                async for line in response.content:
                    yield line

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    async def ready(request: Request) -> Response:
        return Response(b"ok")

    return Starlette(
        routes=[
            Route("/relay", relay, methods=["POST"]),
            Route("/relay/{agent:int}", relay, methods=["POST"]),
            Route("/ready", ready, methods=["GET"]),
        ],
        lifespan=lifespan,
    )


def main() -> None:
    port, agent_urls = int(sys.argv[1]), sys.argv[2].split(",")
    http = sys.argv[3] if len(sys.argv) > 3 else DEFAULT_HTTP
    backlog = int(sys.argv[4]) if len(sys.argv) > 4 else MIN_LISTEN_BACKLOG
    config = uvicorn.Config(
        _app(agent_urls), host="127.0.0.1", port=port, log_level="warning", loop="auto", http=http, backlog=backlog
    )
    run_server(uvicorn.Server(config))


if __name__ == "__main__":
    main()
