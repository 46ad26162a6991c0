"""``/mcp``: the swarm as an MCP server over streamable HTTP, behind the gateway's tokens (mcp_server.py serves it).

The route sits behind the same authentication as every other one (any valid token: the
``chat`` scope); the caller found is who owns the MCP session and the runs its calls start.
The MCP SDK is loaded with the first request to ``/mcp``, not when the gateway starts, so a
gateway nobody reaches over MCP does not pay for it; its sessions then live in the task
group this face holds for the app's lifespan, and end with it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.abc import TaskGroup
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_server.http.auth import require_scope
from agent_server.http.responses import error_response
from gateway.service.core import GatewayService
from protocol import ErrorCode, ProtocolError

MCP_PATH = "/mcp"


class MCPFace:
    """The ASGI endpoint of ``/mcp``: checks the caller's scope, then hands the request to the MCP server."""

    def __init__(self, service: GatewayService, max_body_bytes: int) -> None:
        self.service = service
        self.max_body_bytes = max_body_bytes
        self._tasks: TaskGroup | None = None
        self._endpoint: ASGIApp | None = None
        self._starting = anyio.Lock()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """For the app's lifespan: MCP sessions can be served while the block runs, and end when it does."""
        async with anyio.create_task_group() as self._tasks:
            try:
                yield
            finally:
                self._endpoint = None
                self._tasks.cancel_scope.cancel()  # the MCP sessions
        self._tasks = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            require_scope(HTTPConnection(scope), "chat")
            endpoint = await self._started()
        except ProtocolError as exc:
            await error_response(exc)(scope, receive, send)
            return
        await endpoint(scope, receive, send)

    async def _started(self) -> ASGIApp:
        async with self._starting:
            if self._endpoint is None:
                if self._tasks is None:
                    raise ProtocolError(
                        ErrorCode.INTERNAL_ERROR, "the gateway was started without its lifespan", http_status=503
                    )
                from gateway.service.mcp_server import serve_mcp  # the MCP SDK, loaded on first use

                self._endpoint = await self._tasks.start(serve_mcp, self.service, self.max_body_bytes)
            return self._endpoint
