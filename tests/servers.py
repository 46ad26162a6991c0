"""Real uvicorn servers on loopback for end-to-end tests, started and stopped by fixtures."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agent_server import ServerLimits, build_server
from examples._loopback import free_port


@contextmanager
def serve_app(
    app: Any, port: int | None = None, startup_timeout_s: float = 10.0, limits: ServerLimits | None = None
) -> Iterator[str]:
    """Run an ASGI app on 127.0.0.1 in a thread, built as production builds it; yields its base URL."""
    port = port or free_port()
    server = build_server(app, host="127.0.0.1", port=port, limits=limits, log_level="warning", lifespan="on")
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"uvicorn did not start on port {port}")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
