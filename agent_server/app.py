"""The Starlette app that hosts one agent behind the A2A-NDJSON binding and standard A2A (JSON-RPC, HTTP+JSON).

Every binding drives the same TaskManager: ``/tasks/*`` the NDJSON one, ``POST /`` the
JSON-RPC one (bindings/jsonrpc.py), ``/a2a/rest/*`` the HTTP+JSON one (bindings/rest.py).
The card is at ``/.well-known/agent-card.json`` and, as before, ``/.well-known/agent.json``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from types import TracebackType
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.datastructures import State
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_server.bindings.jsonrpc import JsonRpcBinding
from agent_server.bindings.operations import Admit, Tenants
from agent_server.bindings.refusals import refusal_at
from agent_server.bindings.rest import RestBinding
from agent_server.extended_card import ExtendedCard
from agent_server.hosted import AgentHandler, HostedAgent, as_hosted_agent
from agent_server.http.auth import BearerAuth, Principal, TokenTable, principal_of
from agent_server.http.browsers import browser_middleware
from agent_server.http.direct_routes import DirectRoutes
from agent_server.http.limits import ServerLimits
from agent_server.http.own_url import own_url
from agent_server.http.responses import (
    JSON_MEDIA_TYPE,
    CardDates,
    NDJSONStreamResponse,
    card_response,
    check_content_type,
    guarded,
    internal_error,
    json_response,
    read_body,
)
from agent_server.http.server import build_server, run_server
from agent_server.http.speedups import DEFAULT_HTTP, DEFAULT_LOOP, EventLoop, HttpParser
from agent_server.push.settings import PushSettings
from agent_server.stores import TaskStore, open_store
from agent_server.tasks.manager import TaskManager
from agent_server.telemetry import tracing
from agent_server.telemetry.logs import uvicorn_logging
from agent_server.telemetry.metrics import metrics_endpoint
from agent_server.telemetry.middleware import ObservedRequests
from protocol import (
    REST_PATH,
    AgentCard,
    Envelope,
    EnvelopedProtocolError,
    ErrorCode,
    ParsedRequest,
    ProtocolError,
    StreamEvent,
    Task,
    TaskIdParams,
    TaskQueryParams,
    TaskResubscribeParams,
    TaskSendParams,
    encode_line,
    parse_request,
)
from protocol.a2a import VERSION_HEADER
from protocol.card import grpc_address, reader_version

logger = logging.getLogger("agent_server")

OPERATOR = "operator"
"""The principal of an agent server's one token."""
CARD_PATH = "/.well-known/agent-card.json"
CARD_PATHS = frozenset({CARD_PATH, "/.well-known/agent.json"})

DEFAULT_MAX_BODY_BYTES = 10 * 1024 * 1024
M = TypeVar("M", bound=BaseModel)

_POST_ONLY_NAMES = frozenset({"send", "sendSubscribe", "get", "cancel", "resubscribe"})
_ROUTES_HELP = (
    f"POST / (A2A JSON-RPC), {REST_PATH}/* (A2A HTTP+JSON), "
    "/tasks/send, /tasks/sendSubscribe, /tasks/get, /tasks/cancel, /tasks/resubscribe; "
    "GET /tasks/{id}, /.well-known/agent-card.json, /.well-known/agent.json, /metrics"
)


def create_app(
    agent: HostedAgent | AgentHandler,
    *,
    store: TaskStore | str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    cancel_on_disconnect: bool = False,
    public_url: str | None = None,
    token: str | TokenTable | None = None,
    allowed_origins: Sequence[str] = (),
    push: PushSettings | None = None,
    extended_card: ExtendedCard | None = None,
    grpc_port: int | None = None,
    grpc_host: str = "127.0.0.1",
    grpc_tenants: Tenants | None = None,
    grpc_admit: Admit | None = None,
) -> Starlette:
    """An app serving ``agent``; its TaskManager runs for the app's lifespan (``app.state.task_manager``).

    ``store`` is a TaskStore the caller owns, or a spec for ``open_store`` ("memory",
    "sqlite:PATH") that the app opens at startup and closes at shutdown. Default: memory.
    With a ``token``, every route but the agent card answers 401 without
    ``Authorization: Bearer <token>``, and the card says so; a TokenTable instead of one
    token lets in each of its tokens as its principal, on every binding (the gateway's
    face: its tokens and scopes). ``allowed_origins``: the web
    origins whose pages may call it (browsers.py; default none). ``GET /metrics`` serves the
    process's metrics, behind the token when there is one. Spans are recorded once the
    process has called ``telemetry.tracing.configure`` (``serve`` does).
    ``push``: how task updates reach webhooks (agent_server/push/: public hosts and the ones
    it allows); None, the default: no push notifications, since a webhook URL comes from a
    caller and only the operator may let the server post to it. ``extended_card``: what a caller with the
    token learns beyond the public card (needs a ``token``). ``grpc_port``: also
    serve A2A over gRPC on ``grpc_host:grpc_port`` (0: a free port) for the app's lifespan,
    listed in the card (needs the ``grpc`` extra; bindings/grpc.py); the port bound is
    ``app.state.grpc_port``; ``grpc_tenants``: the other agents that port serves, by the requests'
    ``tenant`` (bindings/grpc.py; the gateway's proxied agents); ``grpc_admit``: what each gRPC call of a
    known caller passes first (the gateway's limits per token).
    """
    tokens = (
        token
        if isinstance(token, TokenTable)
        else TokenTable({token: Principal(OPERATOR)} if token is not None else None)
    )
    if extended_card is not None and not tokens:
        raise ValueError("an extended card is for authenticated callers: give the server a token too")
    hosted = as_hosted_agent(agent)
    handlers = _Handlers(
        hosted,
        max_body_bytes=max_body_bytes,
        public_url=public_url,
        authenticated=bool(tokens),
        pushes=push is not None,
        extended_card=extended_card,
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            task_store = store if isinstance(store, TaskStore) else open_store(store or "memory")
            if not isinstance(store, TaskStore):
                stack.push_async_callback(task_store.aclose)
            manager = TaskManager(hosted, task_store, cancel_on_disconnect=cancel_on_disconnect, push=push)
            await stack.enter_async_context(manager.running())
            app.state.task_manager = manager
            if grpc_port is not None:
                from agent_server.bindings.grpc import grpc_serving  # grpcio is an extra, loaded only when asked for

                def grpc_card() -> AgentCard:  # the HTTP port is not the app's to know: public_url says it
                    return handlers.extended_card(public_url or f"http://{grpc_host}", app.state)

                serving = grpc_serving(
                    manager,
                    tokens,
                    host=grpc_host,
                    port=grpc_port,
                    max_message_bytes=max_body_bytes,
                    extended_card=grpc_card if extended_card is not None else None,
                    tenants=grpc_tenants,
                    admit=grpc_admit,
                )
                app.state.grpc_port = await stack.enter_async_context(serving)
            yield

    def http_card(request: Request) -> AgentCard:
        return handlers.extended_card(handlers.url_of(request), request.app.state)

    card_of = http_card if extended_card is not None else None
    jsonrpc = JsonRpcBinding(_manager, max_body_bytes=max_body_bytes, extended_card=card_of)
    rest = RestBinding(_manager, max_body_bytes=max_body_bytes, extended_card=card_of)
    direct = [  # the NDJSON binding's, the most called: answered before the router (http/direct_routes.py)
        Route("/tasks/send", guarded(handlers.send), methods=["POST"]),
        Route("/tasks/sendSubscribe", guarded(handlers.send_subscribe), methods=["POST"]),
        Route("/tasks/get", guarded(handlers.get), methods=["POST"]),
        Route("/tasks/cancel", guarded(handlers.cancel), methods=["POST"]),
        Route("/tasks/resubscribe", guarded(handlers.resubscribe), methods=["POST"]),
    ]
    routes = [  # tried in order, the most called first: the JSON-RPC and HTTP+JSON ones match none of their paths
        *direct,
        Route("/tasks/{task_id}", guarded(handlers.get_by_path), methods=["GET"]),
        Route("/", guarded(jsonrpc.endpoint), methods=["POST"]),
        *rest.routes(REST_PATH),
        *(Route(path, guarded(handlers.agent_card), methods=["GET"]) for path in sorted(CARD_PATHS)),
        Route("/metrics", guarded(metrics_endpoint), methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            Middleware(ObservedRequests),
            *browser_middleware(allowed_origins, refusal=refusal_at),
            Middleware(BearerAuth, tokens=tokens, is_public=is_card_path, refusal=refusal_at),
            Middleware(DirectRoutes, routes=direct, on_http_exception=_http_exception),
        ],
        exception_handlers={HTTPException: _http_exception, Exception: _unexpected_exception},
    )
    app.router.redirect_slashes = False  # Starlette's redirect would name the request's Host (http/own_url.py)
    return app


def is_card_path(method: str, path: str) -> bool:
    """The agent card is public: a caller reads there how to authenticate."""
    return method in ("GET", "HEAD") and path in CARD_PATHS


def serve(
    agent: HostedAgent | AgentHandler,
    host: str = "127.0.0.1",
    port: int = 8000,
    store: TaskStore | str | None = None,
    *,
    cancel_on_disconnect: bool = False,
    public_url: str | None = None,
    token: str | TokenTable | None = None,
    allowed_origins: Sequence[str] = (),
    push: PushSettings | None = None,
    extended_card: ExtendedCard | None = None,
    log_level: str = "info",
    log_format: str = "text",
    graceful_shutdown_s: int = 5,
    limits: ServerLimits | None = None,
    loop: EventLoop = DEFAULT_LOOP,
    http: HttpParser = DEFAULT_HTTP,
    grpc_port: int | None = None,
) -> None:
    """Run the agent's app with uvicorn until interrupted, behind ``limits`` (default ``ServerLimits()``).

    ``token``, ``allowed_origins``, ``push`` and ``extended_card``: see ``create_app``. Open streams get
    ``graceful_shutdown_s`` seconds at shutdown; then remaining runs end ``canceled``.
    ``log_format="json"``: uvicorn's lines go through the root logger (telemetry/logs.py).
    Traces go where the ``OTEL_*`` environment says (telemetry/tracing.py).
    ``loop`` and ``http``: the event loop and the HTTP parser (agent_server/http/speedups.py).
    ``grpc_port``: A2A over gRPC on that port of ``host`` too (see ``create_app``).
    """
    tracing.configure(f"switchboard-agent-{as_hosted_agent(agent).name}")
    app = create_app(
        agent,
        store=store,
        cancel_on_disconnect=cancel_on_disconnect,
        public_url=public_url,
        token=token,
        allowed_origins=allowed_origins,
        push=push,
        extended_card=extended_card,
        grpc_port=grpc_port,
        grpc_host=host,
    )
    server = build_server(
        app,
        host=host,
        port=port,
        limits=limits,
        log_level=log_level,
        timeout_graceful_shutdown=graceful_shutdown_s,
        loop=loop,
        http=http,
        **uvicorn_logging(log_format),
    )
    run_server(server)


class _Handlers:
    """The endpoints; each parses its body, asks the TaskManager, and answers in the caller's style."""

    def __init__(
        self,
        agent: HostedAgent,
        *,
        max_body_bytes: int,
        public_url: str | None,
        authenticated: bool,
        pushes: bool,
        extended_card: ExtendedCard | None,
    ) -> None:
        self.agent = agent
        self.max_body_bytes = max_body_bytes
        self.public_url = public_url
        self.authenticated = authenticated
        self.pushes = pushes
        self.extended = extended_card
        self.card_dates = CardDates()

    async def send(self, request: Request) -> Response:
        parsed = await self._parse(request, TaskSendParams, "tasks/send")
        with _enveloped(parsed.envelope):
            task = await _manager(request).send_in_caller_task(parsed.params, principal_of(request))
        return _answer(task, parsed.envelope)

    async def send_subscribe(self, request: Request) -> Response:
        parsed = await self._parse(request, TaskSendParams, "tasks/sendSubscribe")
        with _enveloped(parsed.envelope):
            batches = await _started(_manager(request).subscribe_batches(parsed.params, principal_of(request)))
        return NDJSONStreamResponse(_lines(batches, parsed.envelope))

    async def resubscribe(self, request: Request) -> Response:
        parsed = await self._parse(request, TaskResubscribeParams, "tasks/resubscribe")
        with _enveloped(parsed.envelope):
            batches = await _manager(request).resubscribe_batches(
                parsed.params.id, parsed.params.after_seq, principal_of(request)
            )
        return NDJSONStreamResponse(_lines(batches, parsed.envelope))

    async def get(self, request: Request) -> Response:
        parsed = await self._parse(request, TaskQueryParams, "tasks/get")
        with _enveloped(parsed.envelope):
            task = await _manager(request).get(parsed.params.id, parsed.params.history_length, principal_of(request))
        return _answer(task, parsed.envelope)

    async def get_by_path(self, request: Request) -> Response:
        task_id = request.path_params["task_id"]
        if task_id in _POST_ONLY_NAMES:
            raise HTTPException(405, headers={"Allow": "POST"})
        query = {"id": task_id}
        if "historyLength" in request.query_params:
            query["historyLength"] = request.query_params["historyLength"]
        try:
            params = TaskQueryParams.model_validate_strings(query)
        except ValidationError as exc:
            raise ProtocolError.from_validation_error(exc, "query") from None
        task = await _manager(request).get(params.id, params.history_length, principal_of(request))
        return json_response(task.to_wire())

    async def cancel(self, request: Request) -> Response:
        parsed = await self._parse(request, TaskIdParams, "tasks/cancel")
        with _enveloped(parsed.envelope):
            task = await _manager(request).cancel(parsed.params.id, principal_of(request))
        return _answer(task, parsed.envelope)

    async def agent_card(self, request: Request) -> Response:
        asked = request.headers.get(VERSION_HEADER) or request.query_params.get(VERSION_HEADER)
        card = self.public_card(self.url_of(request), request.app.state)
        return card_response(request, card.for_reader(reader_version(asked)), self.card_dates)

    def url_of(self, request: Request) -> str:
        return self.public_url or own_url(request)

    def public_card(self, url: str, state: State) -> AgentCard:
        """The card of the agent served at ``url``, with the gRPC port the app's lifespan bound (if any)."""
        card = self.agent.card(url).offering(push_notifications=self.pushes, extended_card=self.extended is not None)
        grpc_port: int | None = getattr(state, "grpc_port", None)
        if grpc_port is not None:
            card = card.with_grpc(grpc_address(url, grpc_port))
        return card.with_bearer_auth() if self.authenticated else card

    def extended_card(self, url: str, state: State) -> AgentCard:
        """The public card with what ``extended_card`` adds (the bindings ask only for an authenticated caller)."""
        card = self.public_card(url, state)
        return self.extended.applied_to(card) if self.extended is not None else card

    async def _parse(self, request: Request, model: type[M], method: str) -> ParsedRequest[M]:
        check_content_type(request)
        body = await read_body(request, self.max_body_bytes)
        return parse_request(body, model, method)


def _manager(request: Request) -> TaskManager:
    manager: TaskManager | None = getattr(request.app.state, "task_manager", None)
    if manager is None:
        raise ProtocolError(
            ErrorCode.INTERNAL_ERROR, "the agent server was started without its lifespan", http_status=503
        )
    return manager


class _enveloped:
    """Errors after parsing go back in the envelope the request came in.

    A class, not a generator context manager: entered once per request, whose whole cost counts.
    """

    def __init__(self, envelope: Envelope | None) -> None:
        self.envelope = envelope

    def __enter__(self) -> None:
        pass

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if (
            self.envelope is not None
            and isinstance(error, ProtocolError)
            and not isinstance(error, EnvelopedProtocolError)
        ):
            raise EnvelopedProtocolError(error, self.envelope) from None


def _answer(task: Task, envelope: Envelope | None) -> Response:
    if envelope is not None:
        return json_response(envelope.wrap_result(task.to_wire()))
    return Response(task.to_json(), media_type=JSON_MEDIA_TYPE)


Batch = list[StreamEvent]


async def _started(batches: AsyncGenerator[Batch, None]) -> AsyncGenerator[Batch, None]:
    """Run a subscription to its first events (always immediate), so refusals keep their HTTP status."""
    try:
        first = await anext(batches)
    except BaseException:
        await batches.aclose()
        raise
    return _prepended([first], batches)


async def _prepended(head: list[Batch], rest: AsyncGenerator[Batch, None]) -> AsyncGenerator[Batch, None]:
    async with aclosing(rest) as batches:
        yield head.pop()  # not held for the rest of the stream
        async for batch in batches:
            yield batch


async def _lines(batches: AsyncGenerator[Batch, None], envelope: Envelope | None) -> AsyncGenerator[bytes, None]:
    """The events as NDJSON, those ready together in one piece (one write on the socket), each as soon as it is."""

    def encode(event: StreamEvent) -> bytes:
        return encode_line(envelope.wrap_result(event.to_wire())) if envelope is not None else event.encoded + b"\n"

    try:
        async for batch in batches:
            yield b"".join(map(encode, batch))
    except Exception:
        logger.exception("a task event stream broke off")
    finally:
        await batches.aclose()


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        message = f"no such endpoint: {request.method} {request.url.path}; this agent server serves {_ROUTES_HELP}"
        code = ErrorCode.METHOD_NOT_FOUND
    elif exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        message = f"{request.method} is not allowed on {request.url.path}; use {allowed or 'another method'}"
        code = ErrorCode.INVALID_REQUEST
    else:
        message, code = exc.detail, ErrorCode.INVALID_REQUEST
    body = ProtocolError(code, message).to_body().to_wire()
    return json_response(body, status_code=exc.status_code, headers=dict(exc.headers or {}))


async def _unexpected_exception(request: Request, exc: Exception) -> Response:
    return internal_error(request, exc)
