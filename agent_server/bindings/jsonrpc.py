"""The standard A2A face: the JSON-RPC binding (v1.0 and v0.3) at the card's URL, served by the same TaskManager.

One endpoint, ``POST /``, takes every method; the ``A2A-Version`` header says which
version's methods and shapes the request uses (protocol/a2a/rpc.py). Each method is one of
the v1.0 operations (operations.py, shared with the HTTP+JSON and gRPC bindings) on the task
manager the NDJSON binding drives, with the caller's principal, so ownership, limits and
every task rule are the same; this module reads the envelope and writes the answers:

- ``SendMessage`` / ``message/send``: a message without ``taskId`` starts a task (the server
  names it); with one, continues that task (unknown: -32001; finished: -32004). It answers
  once the task is terminal or ``input-required``, or at once with ``returnImmediately``.
  A new task whose agent answered with a ``Message`` and nothing else is answered with that
  Message alone (``{"message": ...}``; protocol/a2a/mapping.py ``bare_reply``); the task is
  kept all the same, as the NDJSON binding has it.
- ``SendStreamingMessage`` / ``message/stream``: Server-Sent Events, each ``data:`` one
  JSON-RPC response: the Task as the run starts, then its status and artifact updates,
  closed after the final one (protocol/a2a/streams.py).
- ``GetTask`` / ``tasks/get``, ``CancelTask`` / ``tasks/cancel``, ``ListTasks`` (1.0 only).
- ``SubscribeToTask`` / ``tasks/resubscribe``: the task now, then its events through the
  next final one; on an ``input-required`` task the stream stays open for the run its next
  message starts (or the cancel that closes it); -32004 for a finished task.
- ``CreateTaskPushNotificationConfig`` / ``tasks/pushNotificationConfig/set``, and Get, List,
  Delete: the task's webhooks (agent_server/push/configs.py, the owner's only); a config
  may also come with a send (``configuration.taskPushNotificationConfig``, v0.3
  ``pushNotificationConfig``). -32003 on a server made without push.
- ``GetExtendedAgentCard`` / ``agent/getAuthenticatedExtendedCard``: the card a caller with a
  token gets (agent_server/extended_card.py), in the caller's version; -32004 where the
  server offers none.

The operations themselves are bindings/operations.py's, shared with gRPC; this module
reads and writes their JSON-RPC shapes in both versions.

Every answer is HTTP 200 with a JSON-RPC response or error, except the refusals of the
HTTP layer before a request is read (401, 413, 415), which keep their status.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from agent_server.bindings import operations
from agent_server.bindings.operations import OpenStream
from agent_server.http.auth import principal_of
from agent_server.http.responses import SSEStreamResponse, check_content_type, json_response, read_body
from agent_server.tasks.manager import TaskManager
from protocol import (
    A2A_V1,
    Call,
    Envelope,
    EnvelopedProtocolError,
    ErrorCode,
    ProtocolError,
    Task,
    parse_call,
    parse_params,
)
from protocol.a2a import VERSION_HEADER, check_method, for_version, push, requested_version, task_to_v1, v03, v1
from protocol.card import AgentCard

logger = logging.getLogger("agent_server")

Manager = Callable[[Request], TaskManager]
CardOf = Callable[[Request], AgentCard]
Handler = Callable[["_Exchange"], Awaitable[Response]]


class _Exchange:
    """One request: its call, the version it speaks, the manager and caller; answers in that version's shapes."""

    def __init__(self, request: Request, call: Call, version: str, manager: TaskManager) -> None:
        self.request = request
        self.call = call
        self.version = version
        self.manager = manager
        self.caller = principal_of(request)

    @property
    def is_v1(self) -> bool:
        return self.version == A2A_V1

    def answer(self, result: Any) -> Response:
        return json_response(self.call.envelope.wrap_result(result))

    def task(self, task: Task) -> dict[str, Any]:
        standard = task_to_v1(task)
        return standard.to_wire() if self.is_v1 else v03.task_from_v1(standard).to_wire()

    def message(self, message: v1.Message) -> dict[str, Any]:
        return {"message": message.to_wire()} if self.is_v1 else v03.message_from_v1(message).to_wire()

    def send_request(self) -> v1.SendMessageRequest:
        if self.is_v1:
            return parse_params(self.call, v1.SendMessageRequest)
        request = v03.send_params_to_v1(parse_params(self.call, v03.MessageSendParams))
        config = request.configuration
        if config is None or not config.task_push_notification_config:
            return request
        try:  # v0.3's config, as the v1.0 one the operations read
            legacy = push.LegacyPushConfig.model_validate(config.task_push_notification_config)
        except ValidationError as exc:
            raise ProtocolError.from_validation_error(exc, "configuration.pushNotificationConfig") from None
        webhook = push.config_from_legacy(legacy, None).to_wire()
        return request.model_copy(
            update={"configuration": config.model_copy(update={"task_push_notification_config": webhook})}
        )

    def push_config(self, config: push.TaskPushNotificationConfig) -> dict[str, Any]:
        return config.to_wire() if self.is_v1 else push.config_to_legacy(config).to_wire()

    def push_target(self) -> tuple[str, str | None]:
        """The task and the config id a get or delete names (v0.3 may leave the id out)."""
        if self.is_v1:
            target = parse_params(self.call, push.GetTaskPushNotificationConfigRequest)
            return target.task_id, target.id
        legacy = parse_params(self.call, push.LegacyConfigParams)
        return legacy.id, legacy.push_notification_config_id

    def stream(self, opened: OpenStream) -> Response:
        envelope = self.call.envelope

        def encode(event: dict[str, Any]) -> bytes:
            return orjson.dumps(envelope.wrap_result(event))

        def fail(error: ProtocolError) -> bytes:
            return orjson.dumps(envelope.wrap_error(error))

        form = None if self.is_v1 else _v03_event
        return SSEStreamResponse(operations.sse_events(opened, encode, fail, form=form))


class JsonRpcBinding:
    """The endpoint; ``manager`` finds the running TaskManager of a request's app."""

    def __init__(self, manager: Manager, *, max_body_bytes: int, extended_card: CardOf | None = None) -> None:
        self.manager = manager
        self.max_body_bytes = max_body_bytes
        self.extended_card = extended_card
        self._methods: dict[str, Handler] = {
            "SendMessage": _send,
            "message/send": _send,
            "SendStreamingMessage": _send_streaming,
            "message/stream": _send_streaming,
            "GetTask": _get,
            "tasks/get": _get,
            "CancelTask": _cancel,
            "tasks/cancel": _cancel,
            "SubscribeToTask": _subscribe,
            "tasks/resubscribe": _subscribe,
            "ListTasks": _list,
            "GetExtendedAgentCard": self._extended_card,
            "agent/getAuthenticatedExtendedCard": self._extended_card,
            "CreateTaskPushNotificationConfig": _create_push,
            "tasks/pushNotificationConfig/set": _create_push,
            "GetTaskPushNotificationConfig": _get_push,
            "tasks/pushNotificationConfig/get": _get_push,
            "ListTaskPushNotificationConfigs": _list_push,
            "tasks/pushNotificationConfig/list": _list_push,
            "DeleteTaskPushNotificationConfig": _delete_push,
            "tasks/pushNotificationConfig/delete": _delete_push,
        }

    async def endpoint(self, request: Request) -> Response:
        try:
            check_content_type(request)
            body = await read_body(request, self.max_body_bytes)
        except ProtocolError as exc:
            return _error(exc, Envelope(rpc_id=None), status=exc.http_status)
        try:
            call = parse_call(body)
        except EnvelopedProtocolError as exc:
            return _error(exc, exc.envelope)
        except ProtocolError as exc:
            return _error(exc, Envelope(rpc_id=None))
        version = A2A_V1
        try:
            version = requested_version(request.headers.get(VERSION_HEADER))
            check_method(call.method, version)
            handler = self._methods[call.method]
            return await handler(_Exchange(request, call, version, self.manager(request)))
        except ProtocolError as exc:
            return _error(for_version(exc, version), call.envelope)
        except Exception as exc:
            logger.exception("JSON-RPC %s failed", call.method)
            internal = ProtocolError(ErrorCode.INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}")
            return _error(internal, call.envelope)

    async def _extended_card(self, exchange: _Exchange) -> Response:
        card_of = self.extended_card
        request = exchange.request
        card = operations.extended_card((lambda: card_of(request)) if card_of is not None else None, exchange.caller)
        return exchange.answer(card.for_reader(exchange.version))


async def _send(exchange: _Exchange) -> Response:
    answer = await operations.send(exchange.manager, exchange.send_request(), exchange.caller)
    if isinstance(answer, v1.Message):
        return exchange.answer(exchange.message(answer))
    task = answer
    return exchange.answer({"task": exchange.task(task)} if exchange.is_v1 else exchange.task(task))


async def _send_streaming(exchange: _Exchange) -> Response:
    return exchange.stream(await operations.send_streaming(exchange.manager, exchange.send_request(), exchange.caller))


async def _get(exchange: _Exchange) -> Response:
    query = parse_params(exchange.call, v1.GetTaskRequest)
    task = await exchange.manager.get(query.id, query.history_length, exchange.caller)
    return exchange.answer(exchange.task(task))


async def _cancel(exchange: _Exchange) -> Response:
    target = parse_params(exchange.call, v1.CancelTaskRequest)
    return exchange.answer(exchange.task(await exchange.manager.cancel(target.id, exchange.caller)))


async def _subscribe(exchange: _Exchange) -> Response:
    target = parse_params(exchange.call, v1.SubscribeToTaskRequest)
    return exchange.stream(await operations.subscribe(exchange.manager, target.id, exchange.caller))


async def _list(exchange: _Exchange) -> Response:
    query = parse_params(exchange.call, v1.ListTasksRequest)
    return exchange.answer(await operations.list_tasks(exchange.manager, query, exchange.caller))


async def _create_push(exchange: _Exchange) -> Response:
    if exchange.is_v1:
        config = parse_params(exchange.call, push.TaskPushNotificationConfig)
    else:
        legacy = parse_params(exchange.call, push.LegacyTaskPushConfig)
        config = push.config_from_legacy(legacy.push_notification_config, legacy.task_id)
    created = await operations.create_push_config(exchange.manager, config, exchange.caller)
    return exchange.answer(exchange.push_config(created))


async def _get_push(exchange: _Exchange) -> Response:
    task_id, config_id = exchange.push_target()
    config = await operations.get_push_config(exchange.manager, task_id, config_id, exchange.caller)
    return exchange.answer(exchange.push_config(config))


async def _list_push(exchange: _Exchange) -> Response:
    if exchange.is_v1:
        task_id = parse_params(exchange.call, push.ListTaskPushNotificationConfigsRequest).task_id
    else:
        task_id = parse_params(exchange.call, push.LegacyConfigParams).id
    configs = await operations.list_push_configs(exchange.manager, task_id, exchange.caller)
    listed = [exchange.push_config(config) for config in configs]
    return exchange.answer({"configs": listed} if exchange.is_v1 else listed)


async def _delete_push(exchange: _Exchange) -> Response:
    task_id, config_id = exchange.push_target()
    await operations.delete_push_config(exchange.manager, task_id, config_id, exchange.caller)
    return exchange.answer({} if exchange.is_v1 else None)


def _error(error: ProtocolError, envelope: Envelope, *, status: int = 200) -> Response:
    return json_response(envelope.wrap_error(error), status_code=status)


def _v03_event(event: v1.StreamResponse) -> dict[str, Any]:
    return v03.event_from_v1(event).to_wire()
