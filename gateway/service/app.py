"""The gateway's Starlette app: the management API and, on the same port, the swarm as an agent (both bindings).

Paths (docs/gateway-service.md has bodies and examples)::

    GET  /health                         liveness and a count of agents and tools (200 while it runs)
    GET  /openapi.json                   this API as an OpenAPI document (openapi.py)
    GET  /ready                          readiness: 503 while its stores do not answer or it shuts down
    GET  /agents  POST /agents           the swarm's agents; register a remote one by URL
    GET  /agents/{name}  DELETE ...      one agent; forget a remote one
    GET  /tools   POST /tools            agent tools; define one
    GET  /tools/{name}  DELETE ...       one tool; remove it
    POST /tools/{name}/call              call a tool directly (JSON result, or NDJSON events)
    POST /sessions/{id}/messages         one user turn; its events as NDJSON, live
    GET  /sessions/{id}  DELETE ...      a session's state; forget it
    GET  /boards/{name}  PUT  DELETE     a named board of the blackboard; write it by version
    GET  /sessions/{id}/board  PUT       the session's own board
    GET  /runs                           runs in the event log, newest first
    GET  /runs/{run_id}                  a run's summary: agents, hops, tools, tokens, cost, duration
    GET  /runs/{run_id}/events           a run's events after a seq, then live with follow=1
    GET  /sessions                       sessions of the caller's recent runs, newest first
    PUT  /sessions/{id}/agent            the agent that takes the session's next turn
    GET  /agents/{name}/reachable        whether a remote agent answers now (its card fetched)
    GET  /ui                             the operator's console (gateway/console/), on this API only
    POST /                               standard A2A JSON-RPC (v1.0, v0.3): the gateway as an agent
    /a2a/rest/*                          standard A2A HTTP+JSON (v1.0): the same
    POST /tasks/*, GET /tasks/{id}       the A2A-NDJSON binding: the same, Switchboard's way
    GET  /.well-known/agent-card.json    the card (also at agent.json)
    /proxy/{name}/...                    a registered remote agent through the gateway, every binding (proxy.py)
    POST|GET|DELETE /mcp                 the swarm as an MCP server, streamable HTTP (mcp_face.py)
    GET  /metrics                        Prometheus metrics (admin)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from agent_server import create_app
from agent_server.app import CARD_PATHS
from agent_server.bindings.refusals import refusal_at
from agent_server.extended_card import ExtendedCard
from agent_server.http.auth import BearerAuth, TokenTable
from agent_server.http.browsers import browser_middleware
from agent_server.http.responses import error_response, guarded, json_response
from agent_server.push.settings import PushSettings
from agent_server.stores import StoreUnavailable
from agent_server.telemetry import tracing
from agent_server.telemetry.metrics import metrics_endpoint
from agent_server.telemetry.middleware import ObservedRequests
from gateway.config.model import GatewayConfig
from gateway.console import console_routes, is_console_path
from gateway.limits.middleware import TokenLimitsMiddleware
from gateway.service.binding import swarm_agent
from gateway.service.build import build_service, gateway_tokens, task_store_spec
from gateway.service.core import GatewayService
from gateway.service.http import api_route, service_of
from gateway.service.mcp_face import MCP_PATH, MCPFace
from gateway.service.openapi import OPENAPI_PATH, openapi_document
from gateway.service.proxy import PROXY_PATH, AgentProxies, is_proxied_card
from gateway.service.routes import agents, boards, reachable, runs, sessions, tools
from protocol import REST_PATH, ErrorCode, ProtocolError

DEFAULT_MAX_BODY_BYTES = 1 << 20
ENDPOINTS = (
    "GET /health",
    "GET /ready",
    "GET /openapi.json",
    "GET|POST /agents",
    "GET|DELETE /agents/{name}",
    "GET /agents/{name}/reachable",
    "GET|POST /tools",
    "GET|DELETE /tools/{name}",
    "POST /tools/{name}/call",
    "GET /sessions",
    "POST /sessions/{id}/messages",
    "GET|DELETE /sessions/{id}",
    "PUT /sessions/{id}/agent",
    "GET|PUT|DELETE /boards/{name}",
    "GET|PUT /sessions/{id}/board",
    "GET /runs",
    "GET /runs/{run_id}",
    "GET /runs/{run_id}/events",
    "POST / (A2A JSON-RPC)",
    f"{REST_PATH}/* (A2A HTTP+JSON)",
    "GET /metrics",
    "POST /tasks/send|sendSubscribe|get|cancel|resubscribe",
    "GET /tasks/{id}",
    "GET /.well-known/agent-card.json",
    "GET /.well-known/agent.json",
    "GET /ui",
    "/proxy/{name} (a registered agent, every A2A binding)",
    "POST|GET|DELETE /mcp (MCP, streamable HTTP)",
)


def create_gateway_app(
    source: GatewayConfig | GatewayService,
    *,
    origin: str = "configuration",
    task_store: str | None = None,
    max_body_bytes: int | None = None,
    public_url: str | None = None,
    tokens: TokenTable | None = None,
    allowed_origins: Sequence[str] | None = None,
    push: PushSettings | None = None,
    extended_card: ExtendedCard | None = None,
    grpc_port: int | None = None,
    grpc_host: str | None = None,
) -> Starlette:
    """The app for a configuration (parts built now, started by the lifespan) or for a service you assembled.

    With a service, ``task_store`` (default ``memory``), ``max_body_bytes`` (default 1 MiB),
    ``public_url``, ``tokens`` (default none: no authentication), ``allowed_origins``
    (default none), and what the swarm's A2A face offers: ``push`` (default none: no push
    notifications), ``extended_card`` (needs tokens) and ``grpc_port`` on ``grpc_host``
    (default 127.0.0.1; the face over gRPC with the same tokens, for the app's lifespan)
    set the edge; with a GatewayConfig they come from the configuration
    (``stores.tasks``, ``gateway.max_body_bytes``, ``gateway.public_url``, ``[security]``
    and ``SWITCHBOARD_ADMIN_TOKEN``, ``[gateway.push]``, ``[gateway.extended_card]``,
    ``gateway.grpc_port`` and ``grpc_host``) and passing them is a TypeError. The app owns the
    service: its lifespan starts it and closes every part at shutdown. A failed start (a
    remote agent that cannot be reached) is also kept in ``app.state.startup_error``.
    """
    tracing.configure(
        f"switchboard-gateway-{source.gateway.name}" if isinstance(source, GatewayConfig) else "switchboard-gateway"
    )
    if isinstance(source, GatewayConfig):
        options = (
            ("task_store", task_store),
            ("max_body_bytes", max_body_bytes),
            ("public_url", public_url),
            ("tokens", tokens),
            ("allowed_origins", allowed_origins),
            ("push", push),
            ("extended_card", extended_card),
            ("grpc_port", grpc_port),
            ("grpc_host", grpc_host),
        )
        given = [name for name, value in options if value is not None]
        if given:
            raise TypeError(
                f"create_gateway_app: {', '.join(given)} cannot be given with a configuration; "
                "set them in it instead (stores.tasks, gateway.max_body_bytes, gateway.public_url, [security], "
                "[gateway.push], [gateway.extended_card], gateway.grpc_port)"
            )
        task_store = task_store_spec(source, origin)
        tokens = gateway_tokens(source, origin)
        service = build_service(source, origin)
        max_body_bytes = source.gateway.max_body_bytes
        public_url = source.gateway.public_url
        allowed_origins = source.security.allowed_origins
        push = source.gateway.push.settings()
        extended_card = source.gateway.extended_card.card() if source.gateway.extended_card is not None else None
        grpc_port = source.gateway.grpc_port
        grpc_host = source.gateway.grpc_bind_host
    else:
        service = source
    tokens = tokens or TokenTable()
    body_limit = max_body_bytes if max_body_bytes is not None else DEFAULT_MAX_BODY_BYTES
    proxies = AgentProxies(
        service,
        tokens=tokens,
        max_body_bytes=body_limit,
        public_url=public_url,
        push=push,
        grpc_port=lambda: getattr(binding.state, "grpc_port", None),
    )
    hosted = swarm_agent(service)
    mcp = MCPFace(service, body_limit)
    binding = create_app(
        hosted,
        token=tokens,
        store=task_store or "memory",
        public_url=public_url,
        max_body_bytes=body_limit,
        grpc_port=grpc_port,
        grpc_host=grpc_host or "127.0.0.1",
        push=push,
        extended_card=extended_card,
        grpc_tenants=proxies.tenant,
        grpc_admit=service.quotas.admit if service.quotas else None,
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            await service.__aenter__()
        except Exception as exc:
            app.state.startup_error = exc
            raise
        try:
            async with binding.router.lifespan_context(binding), proxies.running(), mcp.running():
                hosted.task_manager = binding.state.task_manager
                app.state.service = service
                app.state.max_body_bytes = body_limit
                yield
        finally:
            hosted.task_manager = None
            await service.__aexit__(None, None, None)

    routes = [
        api_route("/", _index, ["GET"], scope="chat"),
        Route("/", binding, methods=["POST"]),
        Route("/health", guarded(_health), methods=["GET"]),
        Route("/ready", guarded(_ready), methods=["GET"]),
        Route(OPENAPI_PATH, guarded(_openapi), methods=["GET"]),
        *reachable.routes,
        *agents.routes,
        *tools.routes,
        *sessions.routes,
        *boards.routes,
        *runs.routes,
        api_route("/metrics", metrics_endpoint, ["GET"]),
        Route("/tasks/{rest:path}", binding),
        Route(REST_PATH + "/{rest:path}", binding),
        *(Route(path, binding) for path in CARD_PATHS),
        Route(PROXY_PATH + "/{name}", proxies, methods=["POST"]),
        Mount(PROXY_PATH + "/{name}", proxies),
        Route(MCP_PATH, mcp),
        *console_routes(),
    ]
    page_origins = [_origin_of(public_url)] if public_url else []
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            Middleware(ObservedRequests),
            *browser_middleware([*(allowed_origins or ()), *page_origins], own_origin=True, refusal=refusal_at),
            Middleware(BearerAuth, tokens=tokens, is_public=_is_public, refusal=refusal_at),
            Middleware(TokenLimitsMiddleware, quotas=service.quotas),
        ],
        exception_handlers={HTTPException: _http_exception},
    )
    app.router.redirect_slashes = False  # Starlette's redirect would name the request's Host (own_url.py)
    return app


def _is_public(method: str, path: str) -> bool:
    """Liveness, the agent cards and the console's files need no token; everything else does when tokens are configured.

    The console's files hold no data: the page asks for a token and sends it with every request it makes.
    """
    return method in ("GET", "HEAD") and (
        path in ("/health", "/ready", OPENAPI_PATH)
        or path in CARD_PATHS
        or is_proxied_card(path)
        or is_console_path(path)
    )


def _origin_of(url: str) -> str:
    """``https://gw.example.com/base`` -> ``https://gw.example.com``: the console's origin behind a public URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


async def _health(request: Request) -> Response:
    """Liveness: 200 while the service runs, whether its stores answer or not (``status`` says ``degraded`` then).

    A Redis outage reaches every replica at once: were liveness to fail on it, an orchestrator
    would restart them all for nothing. ``/ready`` is the one that fails then.
    """
    service = service_of(request)
    if not service.runs.running:
        return _not_running(service)
    problem: str | None = None
    try:
        await service.sync_registrations()
    except StoreUnavailable as exc:
        problem = str(exc)
    status = {"status": "degraded", "problem": problem} if problem else {"status": "ok"}
    return json_response(
        {
            **status,
            "name": service.name,
            "starting_agent": service.starting_agent.name,
            "agents": len(service.members.agents()),
            "tools": len(service.gateway.tools),
        }
    )


async def _ready(request: Request) -> Response:
    """Readiness: 200 when a turn or a call would be taken now (service running, its stores answering), else 503."""
    service = service_of(request)
    if not service.runs.running:
        return _not_running(service)
    try:
        await service.sync_registrations()
    except StoreUnavailable as exc:
        return json_response({"ready": False, "reason": str(exc)}, status_code=503, headers={"retry-after": "1"})
    return json_response({"ready": True})


def _not_running(service: GatewayService) -> Response:
    reason = "the gateway is shutting down" if service.runs.stopping else "the gateway service is not running"
    return json_response({"status": "stopped", "ready": False, "reason": reason}, status_code=503)


async def _openapi(request: Request) -> Response:
    """This API as an OpenAPI 3.1 document, read from the app's own routes (openapi.py)."""
    document = openapi_document(request.app.routes, title=service_of(request).name, is_public=_is_public)
    return json_response(document)


async def _index(request: Request) -> Response:
    return json_response({"name": service_of(request).name, "endpoints": list(ENDPOINTS)})


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        message = f"no such endpoint: {request.method} {request.url.path}; the gateway serves {', '.join(ENDPOINTS)}"
        return error_response(ProtocolError(ErrorCode.METHOD_NOT_FOUND, message, http_status=404))
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "another method")
        message = f"{request.method} is not allowed on {request.url.path}; use {allowed}"
        response = error_response(ProtocolError(ErrorCode.INVALID_REQUEST, message, http_status=405))
        response.headers["allow"] = allowed
        return response
    return error_response(ProtocolError(ErrorCode.INVALID_REQUEST, str(exc.detail), http_status=exc.status_code))
