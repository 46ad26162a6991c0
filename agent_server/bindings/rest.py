"""The standard A2A face over HTTP+JSON (REST), v1.0, under ``REST_PATH``, served by the same TaskManager.

Each operation is an HTTP method and a path, as the specification's HTTP+JSON binding and
a2a.proto's ``google.api.http`` annotations give them, under ``/a2a/rest`` (the NDJSON
binding owns ``/tasks/*`` at the root: ``GET /tasks/{id}`` is its, with its own Task shape):

- ``POST /message:send``: the SendMessageRequest; answers ``{"task": Task}``, or
  ``{"message": Message}`` when a new task's agent answered with a bare Message alone.
- ``POST /message:stream``: Server-Sent Events, each ``data:`` one StreamResponse: the Task
  as the run starts, then its status and artifact updates, closed after the final one.
- ``GET /tasks/{id}`` (``?historyLength=``), ``GET /tasks`` (ListTasks, its fields as query
  parameters), ``POST /tasks/{id}:cancel``.
- ``GET`` or ``POST /tasks/{id}:subscribe``: the task now, then its events, waiting through
  ``input-required`` (a2a.proto says GET, the specification's text and the a2a-sdk client
  POST; both are served).
- ``POST /tasks/{id}/pushNotificationConfigs`` (the config as the body), ``GET`` the same
  path (``{"configs": [...]}``), ``GET`` and ``DELETE .../{configId}``: the task's webhooks,
  its owner's only (-32003 on a server made without push).
- ``GET /extendedAgentCard``: the v1.0 card a caller with a token gets, where the server
  offers one.

Bodies are ``application/a2a+json`` (``application/json`` and any ``+json`` too), answers
``application/a2a+json``. The rules of every operation are operations.py's. A request
names its version in the ``A2A-Version`` header (or query parameter); this interface speaks
1.0, and a request without one is A2A 0.3, refused with ``VERSION_NOT_SUPPORTED``. An
error is the HTTP status of the specification's table and a ``google.rpc.Status`` body
whose ErrorInfo names the reason (protocol/a2a/errors.py); a stream that breaks ends with
an ``error`` event holding the same body.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route

from agent_server.bindings import operations
from agent_server.bindings.operations import OpenStream
from agent_server.http.auth import Principal, principal_of
from agent_server.http.responses import SSEStreamResponse, check_content_type, read_body
from agent_server.tasks.manager import TaskManager
from protocol import A2A_V1, ErrorCode, ProtocolError, Task, WireModel, major_minor
from protocol.a2a import VERSION_HEADER, push, task_to_v1, v1
from protocol.a2a.errors import http_status, status_body
from protocol.card import AgentCard
from protocol.jsonrpc import parse_json_object

logger = logging.getLogger("agent_server")

MEDIA_TYPE = "application/a2a+json"
Manager = Callable[[Request], TaskManager]
CardOf = Callable[[Request], AgentCard]
Handler = Callable[["_Exchange"], Awaitable[Response]]
M = TypeVar("M", bound=WireModel)
_EVERY_METHOD = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


@dataclass(frozen=True)
class RestOperation:
    """One route of the binding: its HTTP method, its path under the interface URL, the v1.0 operation it runs."""

    method: str
    path: str
    operation: str


OPERATIONS: tuple[RestOperation, ...] = (
    RestOperation("POST", "/message:send", "SendMessage"),
    RestOperation("POST", "/message:stream", "SendStreamingMessage"),
    RestOperation("GET", "/tasks", "ListTasks"),
    RestOperation("POST", "/tasks/{id}:cancel", "CancelTask"),
    # a2a.proto says GET, the specification's text and the a2a-sdk client POST: both are served
    *(RestOperation(verb, "/tasks/{id}:subscribe", "SubscribeToTask") for verb in ("GET", "POST")),
    RestOperation("POST", "/tasks/{id}/pushNotificationConfigs", "CreateTaskPushNotificationConfig"),
    RestOperation("GET", "/tasks/{id}/pushNotificationConfigs", "ListTaskPushNotificationConfigs"),
    RestOperation("GET", "/tasks/{id}/pushNotificationConfigs/{config_id}", "GetTaskPushNotificationConfig"),
    RestOperation("DELETE", "/tasks/{id}/pushNotificationConfigs/{config_id}", "DeleteTaskPushNotificationConfig"),
    RestOperation("GET", "/tasks/{id}", "GetTask"),
    RestOperation("GET", "/extendedAgentCard", "GetExtendedAgentCard"),
)
"""Every route, in matching order (``:cancel`` and ``:subscribe`` before the plain ``/tasks/{id}``)."""


class _Exchange:
    """One request: its path parameters, the operations it may run for its caller, and how it is answered."""

    def __init__(self, request: Request, manager: TaskManager, max_body_bytes: int) -> None:
        self.request = request
        self.manager = manager
        self.caller: Principal = principal_of(request)
        self.max_body_bytes = max_body_bytes

    @property
    def task_id(self) -> str:
        return str(self.request.path_params["id"])

    @property
    def config_id(self) -> str:
        return str(self.request.path_params["config_id"])

    async def body(self, model: type[M], what: str) -> M:
        """The body as ``model``; refusals name the fields."""
        return _validated(model, await self.json_body(what), what)

    async def json_body(self, what: str, *, optional: bool = False) -> dict[str, Any]:
        """The body, a JSON object; an ``optional`` one may be absent (the operation's fields are in its path)."""
        raw = await read_body(self.request, self.max_body_bytes)
        if optional and not raw.strip():
            return {}
        check_content_type(self.request)
        return parse_json_object(raw, what)

    def query(self, model: type[M], what: str, **fields: str) -> M:
        """The query parameters (camelCase, as the specification names them) and ``fields`` as ``model``."""
        values = {key: value for key, value in self.request.query_params.items() if key != VERSION_HEADER}
        try:
            return model.model_validate_strings({**values, **fields})
        except ValidationError as exc:
            raise ProtocolError.from_validation_error(exc, what) from None

    def stream(self, opened: OpenStream) -> Response:
        return SSEStreamResponse(operations.sse_events(opened, orjson.dumps, _status_json))


class RestBinding:
    """The routes; ``manager`` finds the running TaskManager of a request's app."""

    def __init__(self, manager: Manager, *, max_body_bytes: int, extended_card: CardOf | None = None) -> None:
        self.manager = manager
        self.max_body_bytes = max_body_bytes
        self.handlers: dict[str, Handler] = {
            "SendMessage": _send,
            "SendStreamingMessage": _send_streaming,
            "GetTask": _get,
            "ListTasks": _list,
            "CancelTask": _cancel,
            "SubscribeToTask": _subscribe,
            "CreateTaskPushNotificationConfig": _create_push,
            "GetTaskPushNotificationConfig": _get_push,
            "ListTaskPushNotificationConfigs": _list_push,
            "DeleteTaskPushNotificationConfig": _delete_push,
            "GetExtendedAgentCard": self._extended_card,
        }
        """The v1.0 operation -> its handler."""
        self.extended_card = extended_card

    def routes(self, prefix: str) -> list[BaseRoute]:
        """The routes under ``prefix`` (``REST_PATH``); last, one answering every other path there with the
        binding's error (so a wrong path or verb gets the body an A2A client reads)."""
        routes: list[BaseRoute] = [
            Route(prefix + entry.path, self._endpoint(self.handlers[entry.operation]), methods=[entry.method])
            for entry in OPERATIONS
        ]
        routes.append(Route(prefix + "/{path:path}", self._unrouted(list(routes), prefix), methods=_EVERY_METHOD))
        return routes

    def _endpoint(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                _check_version(request)
                return await handler(_Exchange(request, self.manager(request), self.max_body_bytes))
            except ProtocolError as exc:
                return error_response(exc)
            except Exception as exc:
                logger.exception("HTTP+JSON %s %s failed", request.method, request.url.path)
                return error_response(
                    ProtocolError(ErrorCode.INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}")
                )

        return endpoint

    def _unrouted(self, routes: list[BaseRoute], prefix: str) -> Callable[[Request], Awaitable[Response]]:
        """404 for a path the binding has not, 405 (with ``Allow``) for a method it has not on that path."""
        listing = ", ".join(f"{entry.method} {entry.path}" for entry in OPERATIONS)

        async def unrouted(request: Request) -> Response:
            allowed = sorted(
                {
                    method
                    for route in routes
                    if route.matches(request.scope)[0] is Match.PARTIAL
                    for method in _methods(route)
                }
            )
            path = request.url.path
            if allowed:
                message = f"{request.method} is not allowed on {path}; use {', '.join(allowed)}"
                error = ProtocolError(ErrorCode.INVALID_REQUEST, message, http_status=405)
                return error_response(error, headers={"allow": ", ".join(allowed)})
            message = f"no HTTP+JSON operation at {request.method} {path}; under {prefix} the operations are {listing}"
            return error_response(ProtocolError(ErrorCode.METHOD_NOT_FOUND, message))

        return unrouted

    async def _extended_card(self, exchange: _Exchange) -> Response:
        card_of, request = self.extended_card, exchange.request
        card = operations.extended_card((lambda: card_of(request)) if card_of is not None else None, exchange.caller)
        return _answer(card.for_reader(A2A_V1))


def error_response(error: ProtocolError, headers: dict[str, str] | None = None) -> Response:
    """The error as this binding answers it: the specification's status and a ``google.rpc.Status`` body."""
    return Response(_status_json(error), status_code=http_status(error), media_type=MEDIA_TYPE, headers=headers)


def _answer(content: Any) -> Response:
    return Response(orjson.dumps(content), media_type=MEDIA_TYPE)


def _task(task: Task) -> dict[str, Any]:
    return task_to_v1(task).to_wire()


async def _send(exchange: _Exchange) -> Response:
    request = await exchange.body(v1.SendMessageRequest, "SendMessageRequest")
    answer = await operations.send(exchange.manager, request, exchange.caller)
    if isinstance(answer, v1.Message):
        return _answer({"message": answer.to_wire()})
    return _answer({"task": _task(answer)})


async def _send_streaming(exchange: _Exchange) -> Response:
    request = await exchange.body(v1.SendMessageRequest, "SendMessageRequest")
    return exchange.stream(await operations.send_streaming(exchange.manager, request, exchange.caller))


async def _get(exchange: _Exchange) -> Response:
    query = exchange.query(v1.GetTaskRequest, "GetTaskRequest", id=exchange.task_id)
    return _answer(_task(await exchange.manager.get(query.id, query.history_length, exchange.caller)))


async def _list(exchange: _Exchange) -> Response:
    query = exchange.query(v1.ListTasksRequest, "ListTasksRequest")
    return _answer(await operations.list_tasks(exchange.manager, query, exchange.caller))


async def _cancel(exchange: _Exchange) -> Response:
    await exchange.json_body("CancelTaskRequest", optional=True)  # its id is the path's
    return _answer(_task(await exchange.manager.cancel(exchange.task_id, exchange.caller)))


async def _subscribe(exchange: _Exchange) -> Response:
    if exchange.request.method == "POST":
        await exchange.json_body("SubscribeToTaskRequest", optional=True)  # its id is the path's
    return exchange.stream(await operations.subscribe(exchange.manager, exchange.task_id, exchange.caller))


async def _create_push(exchange: _Exchange) -> Response:
    body = await exchange.json_body("TaskPushNotificationConfig")
    config = _validated(
        push.TaskPushNotificationConfig, {**body, "taskId": exchange.task_id}, "TaskPushNotificationConfig"
    )
    created = await operations.create_push_config(exchange.manager, config, exchange.caller)
    return _answer(created.to_wire())


async def _get_push(exchange: _Exchange) -> Response:
    config = await operations.get_push_config(exchange.manager, exchange.task_id, exchange.config_id, exchange.caller)
    return _answer(config.to_wire())


async def _list_push(exchange: _Exchange) -> Response:
    configs = await operations.list_push_configs(exchange.manager, exchange.task_id, exchange.caller)
    return _answer({"configs": [config.to_wire() for config in configs]})


async def _delete_push(exchange: _Exchange) -> Response:
    await operations.delete_push_config(exchange.manager, exchange.task_id, exchange.config_id, exchange.caller)
    return _answer({})


def _check_version(request: Request) -> None:
    """This interface speaks 1.0: the header (or query parameter) must say so; none at all means 0.3."""
    said = (request.headers.get(VERSION_HEADER) or request.query_params.get(VERSION_HEADER) or "").strip()
    if major_minor(said) == A2A_V1:
        return
    request_says = f"says A2A-Version {said!r}" if said else "has no A2A-Version header, which means 0.3"
    raise ProtocolError(
        ErrorCode.VERSION_NOT_SUPPORTED,
        f"this HTTP+JSON interface speaks A2A {A2A_V1} and the request {request_says}; send 'A2A-Version: {A2A_V1}' "
        "(A2A 0.3 is served over JSON-RPC, at the card's JSON-RPC interface)",
        data={"supportedVersions": [A2A_V1]},
    )


def _validated(model: type[M], obj: dict[str, Any], what: str) -> M:
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise ProtocolError.from_validation_error(exc, what) from None


def _methods(route: BaseRoute) -> set[str]:
    return set(getattr(route, "methods", None) or ()) - {"HEAD"}


def _status_json(error: ProtocolError) -> bytes:
    return orjson.dumps(status_body(error))
