"""The gateway's uvicorn server: it ends the service's runs before it waits for connections to close.

The NDJSON streams following those runs then end with ``run_failed`` at once, instead of
being cut (with a traceback each) when uvicorn's graceful shutdown times out. Once the
service has started and the server listens, ``on_started`` (when set) is handed the
service: ``switchboard gateway`` prints what runs then, registry applied.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

import uvicorn
from starlette.applications import Starlette

from agent_server.http.server import build_server
from agent_server.telemetry.logs import uvicorn_logging
from gateway.config.model import GatewayConfig
from gateway.service.core import GatewayService

GRACEFUL_SHUTDOWN_S = 3


class GatewayServer(uvicorn.Server):
    on_started: Callable[[GatewayService], Awaitable[None]] | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        service = self._service()
        if self.started and self.on_started is not None and service is not None:
            await self.on_started(service)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        service = self._service()
        if service is not None:
            await service.stop_runs()
        await super().shutdown(sockets)

    def _service(self) -> GatewayService | None:
        """The service the app's lifespan started, if it has."""
        app: Starlette = self.config.app  # type: ignore[assignment]  # build_gateway_server gives a Starlette app
        service = getattr(app.state, "service", None)
        return service if isinstance(service, GatewayService) else None


def build_gateway_server(app: Starlette, config: GatewayConfig, *, log_format: str = "text") -> GatewayServer:
    """The server for ``app`` where ``config`` says, behind its connection limits; logging as ``log_format`` says."""
    server = build_server(
        app,
        host=config.gateway.host,
        port=config.gateway.port,
        limits=config.gateway.server_limits(),
        server_class=GatewayServer,
        loop=config.gateway.loop,
        http=config.gateway.http,
        log_level=config.gateway.log_level,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        **uvicorn_logging(log_format),
    )
    assert isinstance(server, GatewayServer)
    return server
