"""The standard A2A face over gRPC (A2A v1.0's ``lf.a2a.v1.A2AService``), served by the same TaskManager.

The service definition is the one the a2a-sdk package ships, generated from the
specification's a2a.proto (``a2a.types.a2a_pb2`` and ``a2a_pb2_grpc``; docs/a2a.md says
why): this module is loaded only when a server is asked for a gRPC port, so grpcio and the
SDK stay an extra (``a2a-switchboard[grpc]``).

One conversion, no second mapping: a request is read as ProtoJSON (``MessageToDict``) into
the v1.0 models of protocol/a2a/v1.py, the operation runs as on the JSON-RPC binding
(bindings/operations.py), and its answer, already in ProtoJSON's shape, is parsed back into
the protobuf message (``ParseDict``).

- Metadata: ``authorization: Bearer <token>`` names the caller (the server's TokenTable,
  so ownership is the same as over HTTP); without a valid one, ``UNAUTHENTICATED``.
  ``a2a-version``, when sent, must be 1.0 (the only version with this service).
- Push-notification configs and the extended card: the same operations as over JSON-RPC
  (the task's owner only; the extended card for a caller with a token).
- Streams (``SendStreamingMessage``, ``SubscribeToTask``): the Task, then its status and
  artifact updates; a client that goes away cancels the handler, which closes its
  subscription as an HTTP disconnect does.
- Errors: a ``google.rpc.Status`` in ``grpc-status-details-bin`` with an ``ErrorInfo``
  (domain ``a2a-protocol.org``, reason the A2A error's name), on the status code of the
  specification's table (TaskNotFound ``NOT_FOUND``, TaskNotCancelable and the other
  refusals ``FAILED_PRECONDITION``, bad input ``INVALID_ARGUMENT``).
- Tenants: a request's ``tenant`` picks which agent behind this endpoint answers it (the
  gateway serves each proxied agent so); an empty one is the server's own agent.
- Limits: a request message is at most the server's body limit, and nests no deeper than
  a JSON body may.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing, asynccontextmanager
from typing import Any, NoReturn, TypeVar

import grpc
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.protobuf import any_pb2, empty_pb2, json_format
from google.rpc import error_details_pb2, status_pb2
from pydantic import ValidationError

from agent_server.bindings import operations
from agent_server.bindings.grpc_text import text_update_message
from agent_server.bindings.operations import Admit, CardOf, OpenStream, Tenants
from agent_server.http.auth import ANONYMOUS, Principal, TokenTable, bearer_token
from agent_server.tasks.manager import TaskManager
from protocol import A2A_V1, MAX_JSON_DEPTH, ErrorCode, ProtocolError, Task, json_depth
from protocol._wire import WireModel
from protocol.a2a import VERSION_HEADER, push, task_to_v1, v1
from protocol.a2a.errors import ERROR_DOMAIN, ERROR_KINDS, GRPC_OF_HTTP
from protocol.a2a.text_updates import read_text_update
from protocol.card import major_minor

logger = logging.getLogger("agent_server")

M = TypeVar("M", bound=WireModel)
R = TypeVar("R")
P = TypeVar("P")
Context = Any
"""A ``grpc.aio.ServicerContext`` (grpcio ships no types)."""


STATUS_DETAILS_KEY = "grpc-status-details-bin"
_STATUS_OF_CODE = {code: grpc.StatusCode[kind.grpc_status] for code, kind in ERROR_KINDS.items()}
_STATUS_OF_HTTP = {status: grpc.StatusCode[name] for status, name in GRPC_OF_HTTP.items()}


class GrpcBinding:
    """The A2AService's methods over ``manager``; ``tokens`` as the HTTP server has them (empty: everyone is admin);
    ``extended_card``: the card a caller with a token gets (None: the server offers none); ``tenants``: the
    TaskManager of each other agent served behind this endpoint, by the requests' ``tenant`` (None: only
    ``manager``, whose tenant is empty); ``admit``: what every call of a known caller passes first (the gateway's
    limits per token, counted over HTTP by its middleware)."""

    def __init__(
        self,
        manager: TaskManager,
        tokens: TokenTable,
        extended_card: CardOf | None = None,
        tenants: Tenants | None = None,
        admit: Admit | None = None,
    ) -> None:
        self.manager = manager
        self.tokens = tokens
        self.extended_card = extended_card
        self.tenants = tenants
        self.admit = admit

    async def _for(self, request: Any) -> TaskManager:
        """The TaskManager of the request's tenant (A2A: one endpoint, several agents, told apart by ``tenant``)."""
        tenant: str = request.tenant
        if not tenant:
            return self.manager
        if self.tenants is None:
            raise ProtocolError(
                ErrorCode.INVALID_REQUEST,
                f"this server serves one agent, with no tenant; send the request without tenant {tenant!r}",
                http_status=404,
            )
        return await self.tenants(tenant)

    async def SendMessage(self, request: a2a_pb2.SendMessageRequest, context: Context) -> a2a_pb2.SendMessageResponse:
        async def work(caller: Principal) -> a2a_pb2.SendMessageResponse:
            answer = await operations.send(await self._for(request), _read(request, v1.SendMessageRequest), caller)
            if isinstance(answer, v1.Message):
                return a2a_pb2.SendMessageResponse(message=_proto(answer.to_wire(), a2a_pb2.Message()))
            return a2a_pb2.SendMessageResponse(task=_task_message(answer))

        return await self._unary(context, work)

    async def SendStreamingMessage(
        self, request: a2a_pb2.SendMessageRequest, context: Context
    ) -> AsyncIterator[a2a_pb2.StreamResponse]:
        async def opening(caller: Principal) -> OpenStream:
            return await operations.send_streaming(
                await self._for(request), _read(request, v1.SendMessageRequest), caller
            )

        async for message in self._stream(context, opening):
            yield message

    async def GetTask(self, request: a2a_pb2.GetTaskRequest, context: Context) -> a2a_pb2.Task:
        async def work(caller: Principal) -> a2a_pb2.Task:
            query = _read(request, v1.GetTaskRequest)
            return _task_message(await (await self._for(request)).get(query.id, query.history_length, caller))

        return await self._unary(context, work)

    async def ListTasks(self, request: a2a_pb2.ListTasksRequest, context: Context) -> a2a_pb2.ListTasksResponse:
        async def work(caller: Principal) -> a2a_pb2.ListTasksResponse:
            page = await operations.list_tasks(await self._for(request), _read(request, v1.ListTasksRequest), caller)
            return _proto(page, a2a_pb2.ListTasksResponse())

        return await self._unary(context, work)

    async def CancelTask(self, request: a2a_pb2.CancelTaskRequest, context: Context) -> a2a_pb2.Task:
        async def work(caller: Principal) -> a2a_pb2.Task:
            target = _read(request, v1.CancelTaskRequest)
            return _task_message(await (await self._for(request)).cancel(target.id, caller))

        return await self._unary(context, work)

    async def SubscribeToTask(
        self, request: a2a_pb2.SubscribeToTaskRequest, context: Context
    ) -> AsyncIterator[a2a_pb2.StreamResponse]:
        async def opening(caller: Principal) -> OpenStream:
            return await operations.subscribe(
                await self._for(request), _read(request, v1.SubscribeToTaskRequest).id, caller
            )

        async for message in self._stream(context, opening):
            yield message

    async def GetExtendedAgentCard(
        self, request: a2a_pb2.GetExtendedAgentCardRequest, context: Context
    ) -> a2a_pb2.AgentCard:
        async def work(caller: Principal) -> a2a_pb2.AgentCard:
            card = operations.extended_card(None if request.tenant else self.extended_card, caller)
            return _proto(card.for_reader(A2A_V1), a2a_pb2.AgentCard())

        return await self._unary(context, work)

    async def CreateTaskPushNotificationConfig(
        self, request: a2a_pb2.TaskPushNotificationConfig, context: Context
    ) -> a2a_pb2.TaskPushNotificationConfig:
        async def create(caller: Principal) -> push.TaskPushNotificationConfig:
            config = _read(request, push.TaskPushNotificationConfig)
            return await operations.create_push_config(await self._for(request), config, caller)

        return await self._config(context, create)

    async def GetTaskPushNotificationConfig(
        self, request: a2a_pb2.GetTaskPushNotificationConfigRequest, context: Context
    ) -> a2a_pb2.TaskPushNotificationConfig:
        async def get(caller: Principal) -> push.TaskPushNotificationConfig:
            target = _read(request, push.GetTaskPushNotificationConfigRequest)
            return await operations.get_push_config(await self._for(request), target.task_id, target.id, caller)

        return await self._config(context, get)

    async def ListTaskPushNotificationConfigs(
        self, request: a2a_pb2.ListTaskPushNotificationConfigsRequest, context: Context
    ) -> a2a_pb2.ListTaskPushNotificationConfigsResponse:
        async def work(caller: Principal) -> a2a_pb2.ListTaskPushNotificationConfigsResponse:
            task_id = _read(request, push.ListTaskPushNotificationConfigsRequest).task_id
            configs = await operations.list_push_configs(await self._for(request), task_id, caller)
            return a2a_pb2.ListTaskPushNotificationConfigsResponse(configs=[_config_message(c) for c in configs])

        return await self._unary(context, work)

    async def DeleteTaskPushNotificationConfig(
        self, request: a2a_pb2.DeleteTaskPushNotificationConfigRequest, context: Context
    ) -> empty_pb2.Empty:
        async def work(caller: Principal) -> empty_pb2.Empty:
            target = _read(request, push.DeleteTaskPushNotificationConfigRequest)
            await operations.delete_push_config(await self._for(request), target.task_id, target.id, caller)
            return empty_pb2.Empty()

        return await self._unary(context, work)

    # -- framing ---------------------------------------------------------------------------

    async def _config(
        self, context: Context, work: Callable[[Principal], Awaitable[push.TaskPushNotificationConfig]]
    ) -> a2a_pb2.TaskPushNotificationConfig:
        """A config operation's answer as the proto's config (``work`` reads the request: a bad one aborts too)."""

        async def answered(caller: Principal) -> a2a_pb2.TaskPushNotificationConfig:
            return _config_message(await work(caller))

        return await self._unary(context, answered)

    async def _unary(self, context: Context, work: Callable[[Principal], Awaitable[R]]) -> R:
        """``work``'s answer for the caller the metadata names; a refusal or failure aborts with its status."""
        try:
            return await work(await self._admitted(context))
        except Exception as exc:
            return await _abort(context, exc if isinstance(exc, ProtocolError) else _internal(exc))

    async def _stream(
        self, context: Context, opening: Callable[[Principal], Awaitable[OpenStream]]
    ) -> AsyncIterator[a2a_pb2.StreamResponse]:
        """The opening Task, then each event; a failure, before or during the stream, aborts it with its status."""
        error: ProtocolError | None = None
        try:
            opened = await opening(await self._admitted(context))
            encoder = opened.encoder
            yield _stream_message(encoder.opening().to_wire())
            for wire in encoder.encode_batch_wire(opened.ready):
                yield _stream_message(wire)
            async with aclosing(opened.batches) as batches:
                async for batch in batches:
                    for wire in encoder.encode_batch_wire(batch):
                        yield _stream_message(wire)
        except ProtocolError as exc:
            error = exc
        except Exception as exc:
            error = _internal(exc)
        if error is not None:
            await _abort(context, error)

    async def _admitted(self, context: Context) -> Principal:
        caller = self._caller(context)
        if self.admit is not None:
            await self.admit(caller)
        return caller

    def _caller(self, context: Context) -> Principal:
        """Who calls, by the ``authorization`` metadata; a request for a version other than 1.0 is refused."""
        metadata = {key.lower(): value for key, value in context.invocation_metadata() or ()}
        version = metadata.get(VERSION_HEADER.lower())
        if version and major_minor(version) != A2A_V1:
            raise ProtocolError(
                ErrorCode.VERSION_NOT_SUPPORTED,
                f"A2A-Version {version.strip()!r} is not spoken over gRPC here; send 'a2a-version: {A2A_V1}' "
                "(A2A 0.3 is served over JSON-RPC at the card's URL)",
            )
        if not self.tokens:
            return ANONYMOUS
        header = metadata.get("authorization")
        token = bearer_token(header if isinstance(header, str) else None)
        principal = self.tokens.find(token) if token is not None else None
        if principal is None:
            said = "has no 'authorization' metadata" if header is None else "carries a token this server does not know"
            raise ProtocolError(
                ErrorCode.INVALID_REQUEST,
                f"this call {said}; send 'authorization: Bearer <token>' with the token the agent was given",
                http_status=401,
            )
        return principal


@asynccontextmanager
async def grpc_serving(
    manager: TaskManager,
    tokens: TokenTable,
    *,
    host: str,
    port: int,
    max_message_bytes: int,
    extended_card: CardOf | None = None,
    tenants: Tenants | None = None,
    admit: Admit | None = None,
) -> AsyncIterator[int]:
    """The A2AService on ``host:port`` (0: a port the kernel picks) while the block runs; yields the port bound.

    Port reuse is off, so a port another server holds fails here rather than being shared.
    Leaving the block ends the open calls at once: the HTTP server's graceful shutdown has
    already been waited for, and the task manager is about to stop.
    """
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0), ("grpc.max_receive_message_length", max_message_bytes)])
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcBinding(manager, tokens, extended_card, tenants, admit), server)
    try:
        bound: int = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError as exc:
        raise OSError(f"cannot serve gRPC on {host}:{port}: {exc}") from None
    await server.start()
    try:
        yield bound
    finally:
        await server.stop(None)


def _read(request: Any, model: type[M]) -> M:
    """The request as the v1.0 model its ProtoJSON is; INVALID_ARGUMENT naming the fields it gets wrong."""
    data = json_format.MessageToDict(request)
    depth = json_depth(data)
    if depth > MAX_JSON_DEPTH:
        raise ProtocolError(
            ErrorCode.INVALID_REQUEST, f"the request nests {depth} levels deep; the limit is {MAX_JSON_DEPTH}"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ProtocolError.from_validation_error(exc) from None


def _proto(data: dict[str, Any], message: P) -> P:
    """``message`` filled from its ProtoJSON ``data`` (what the v1.0 models write)."""
    json_format.ParseDict(data, message, ignore_unknown_fields=True)
    return message


def _task_message(task: Task) -> a2a_pb2.Task:
    return _proto(task_to_v1(task).to_wire(), a2a_pb2.Task())


def _stream_message(event: dict[str, Any]) -> a2a_pb2.StreamResponse:
    """A StreamResponse's wire JSON as its message: a text update by its fields (grpc_text.py), the rest by
    ProtoJSON."""
    update = read_text_update(event)
    return text_update_message(update) if update is not None else _proto(event, a2a_pb2.StreamResponse())


def _config_message(config: push.TaskPushNotificationConfig) -> a2a_pb2.TaskPushNotificationConfig:
    return _proto(config.to_wire(), a2a_pb2.TaskPushNotificationConfig())


def _internal(exc: Exception) -> ProtocolError:
    logger.exception("a gRPC call failed")
    return ProtocolError(ErrorCode.INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}")


async def _abort(context: Context, error: ProtocolError) -> NoReturn:
    """End the call with ``error``'s status; an A2A error carries its ErrorInfo in the rich status."""
    code = _STATUS_OF_HTTP.get(error.http_status) or _STATUS_OF_CODE.get(error.code, grpc.StatusCode.UNKNOWN)
    if error.http_status not in _STATUS_OF_HTTP and error.code in _STATUS_OF_CODE:
        info = error_details_pb2.ErrorInfo(reason=ERROR_KINDS[error.code].reason, domain=ERROR_DOMAIN)
        detail = any_pb2.Any()
        detail.Pack(info)
        status = status_pb2.Status(code=code.value[0], message=error.message, details=[detail])
        context.set_trailing_metadata(((STATUS_DETAILS_KEY, status.SerializeToString()),))
    await context.abort(code, error.message)
    raise AssertionError("grpc.aio's abort ends the call by raising")
