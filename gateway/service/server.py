"""The gateway's uvicorn server: it ends the service's runs before it waits for connections to close.

The NDJSON streams following those runs then end with ``run_failed`` at once, instead of
being cut (with a traceback each) when uvicorn's graceful shutdown times out.
"""

from __future__ import annotations

import socket

import uvicorn
from starlette.applications import Starlette

from agent_server.http.server import build_server
from agent_server.telemetry.logs import uvicorn_logging
from gateway.config.model import GatewayConfig
from gateway.service.core import GatewayService

GRACEFUL_SHUTDOWN_S = 3


class GatewayServer(uvicorn.Server):
    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        app: Starlette = self.config.app  # type: ignore[assignment]  # build_gateway_server gives a Starlette app
        service = getattr(app.state, "service", None)
        if isinstance(service, GatewayService):
            await service.stop_runs()
        await super().shutdown(sockets)


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
