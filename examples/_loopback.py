"""Agent servers on loopback for the examples: each one a uvicorn server inside the caller's event loop.

async with serve_agent(make_researcher()) as url:
    ...  # url is "http://127.0.0.1:PORT"; the server stops when the block ends
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from starlette.types import ASGIApp

from agent_server import HostedAgent, build_server, create_app
from agent_server.http.loopback import free_port

STARTUP_TIMEOUT_S = 10.0


@asynccontextmanager
async def serve_agent(agent: HostedAgent, port: int | None = None) -> AsyncIterator[str]:
    """Serve ``agent`` on 127.0.0.1 (a free port unless given); yields its base URL once it accepts connections."""
    async with serve_app(create_app(agent), port) as url:
        yield url


@asynccontextmanager
async def serve_app(app: ASGIApp, port: int | None = None) -> AsyncIterator[str]:
    """Serve any ASGI app (an agent server, a gateway) the same way, behind the production limits."""
    port = port or free_port()
    server = build_server(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve)
        with anyio.fail_after(STARTUP_TIMEOUT_S):
            while not server.started:  # noqa: ASYNC110 - uvicorn sets a flag, it has no event to wait on
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
