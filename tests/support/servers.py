"""Real uvicorn servers on loopback for end-to-end tests, started and stopped by fixtures, and ports for servers
that tests start as processes."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agent_server import ServerLimits, build_server
from agent_server.http.speedups import DEFAULT_HTTP, HttpParser
from tests.support.waiting import wait_until

STOP_TIMEOUT_S = 10.0


@contextmanager
def serve_app(
    app: Any,
    port: int | None = None,
    startup_timeout_s: float = 10.0,
    limits: ServerLimits | None = None,
    http: HttpParser = DEFAULT_HTTP,
) -> Iterator[str]:
    """Run an ASGI app on 127.0.0.1 in a thread, built as production builds it; yields its base URL.

    The listening socket is bound here (to a port the kernel picks, unless ``port``), so no other
    server, of this run or of another running at the same time, can take the port between its
    choice and the bind. Leaving the block fails if the server has not stopped within STOP_TIMEOUT_S:
    a request still running then is a test that left something behind.
    """
    # IPPROTO_TCP as getaddrinfo gives it when uvicorn binds: asyncio then sets TCP_NODELAY on each
    # connection, as in production (with proto 0 it does not, and every keep-alive request waits for a delayed ACK).
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port or 0))
    port = listener.getsockname()[1]
    server = build_server(
        app, host="127.0.0.1", port=port, limits=limits, http=http, log_level="warning", lifespan="on"
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, name=f"uvicorn-{port}", daemon=True)
    try:
        thread.start()
        wait_until(
            lambda: server.started or not thread.is_alive(), f"uvicorn to start on port {port}", startup_timeout_s
        )
        if not server.started:
            raise RuntimeError(f"uvicorn did not start on port {port}")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=STOP_TIMEOUT_S)
        listener.close()
    if thread.is_alive():
        raise RuntimeError(
            f"uvicorn on port {port} did not stop within {STOP_TIMEOUT_S:g} s: a request is still running"
        )
