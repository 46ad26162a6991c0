"""Agent servers on loopback for the examples: each one a uvicorn server inside the caller's event loop.

async with serve_agent(make_researcher()) as url:
    ...  # url is "http://127.0.0.1:PORT"; the server stops when the block ends
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from starlette.types import ASGIApp

from agent_server import HostedAgent, build_server, create_app

STARTUP_TIMEOUT_S = 10.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 kept free for a server that binds it with ``SO_REUSEADDR`` (uvicorn, Redis, ours).

    Closing a socket picked with port 0 would leave a race: until the server binds, the kernel
    may hand the same port to anyone else asking for port 0 (a parallel test, a client's
    ephemeral port). So the port is left in TIME_WAIT by one local connection: for a minute the
    kernel gives it to no one asking for any port, while a ``SO_REUSEADDR`` listener may take it.
    """
    with socket.socket() as listener, socket.socket() as client:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        client.connect(listener.getsockname())
        accepted, _ = listener.accept()
        accepted.close()  # the side that closes first keeps the TIME_WAIT, on the listener's port
        return int(listener.getsockname()[1])


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
