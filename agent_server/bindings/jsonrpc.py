"""The standard A2A face: the JSON-RPC binding (v1.0 and v0.3) at the card's URL, served by the same TaskManager.

One endpoint, ``POST /``, takes every method; the ``A2A-Version`` header says which
version's methods and shapes the request uses (protocol/a2a/rpc.py). Each method maps onto
the task manager the NDJSON binding drives, through the one mapping (protocol/a2a), with
the caller's principal, so ownership, limits and every task rule are the same:

- ``SendMessage`` / ``message/send``: a message without ``taskId`` starts a task (the server
  names it); with one, continues that task (unknown: -32001; finished: -32004). It answers
  once the task is terminal or ``input-required``, or at once with ``returnImmediately``.
- ``SendStreamingMessage`` / ``message/stream``: Server-Sent Events, each ``data:`` one
  JSON-RPC response: the Task as the run starts, then its status and artifact updates,
  closed after the final one (protocol/a2a/streams.py).
- ``GetTask`` / ``tasks/get``, ``CancelTask`` / ``tasks/cancel``, ``ListTasks`` (1.0 only).
- ``SubscribeToTask`` / ``tasks/resubscribe``: the task now, then its events; -32004 for a
  finished task.
- ``CreateTaskPushNotificationConfig`` / ``tasks/pushNotificationConfig/set``, and Get, List,
  Delete: the task's webhooks (agent_server/push/configs.py, the owner's only); a config
  may also come with a send (``configuration.taskPushNotificationConfig``, v0.3
  ``pushNotificationConfig``). -32003 on a server made without push.
- ``GetExtendedAgentCard`` / ``agent/getAuthenticatedExtendedCard``: the card a caller with a
  token gets (agent_server/extended_card.py); -32004 where the server offers none.

Every answer is HTTP 200 with a JSON-RPC response or error, except the refusals of the
HTTP layer before a request is read (401, 413, 415), which keep their status.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from datetime import UTC, datetime
from typing import Any

import orjson
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response

from agent_server.extended_card import no_extended_card
from agent_server.http.auth import ANONYMOUS, principal_of
from agent_server.http.responses import SSEStreamResponse, check_content_type, json_response, read_body
from agent_server.stores import TaskFilter
from agent_server.tasks.manager import TaskManager
from protocol import (
    A2A_V1,
    Call,
    Envelope,
    EnvelopedProtocolError,
    ErrorCode,
    ProtocolError,
    StreamEvent,
    Task,
    TaskSendParams,
    encode_event,
    parse_call,
    parse_params,
)
from protocol.a2a import (
    VERSION_HEADER,
    StreamEncoder,
    check_method,
    for_version,
    push,
    requested_version,
    send_params_from_v1,
    task_to_v1,
    v03,
    v1,
)
from protocol.a2a.mapping import STATE_FROM_V1
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

    def event(self, event: v1.StreamResponse) -> dict[str, Any]:
        return event.to_wire() if self.is_v1 else v03.event_from_v1(event).to_wire()

    def send_request(self) -> v1.SendMessageRequest:
        if self.is_v1:
            return parse_params(self.call, v1.SendMessageRequest)
        return v03.send_params_to_v1(parse_params(self.call, v03.MessageSendParams))

    def webhook(self, request: v1.SendMessageRequest) -> push.TaskPushNotificationConfig | None:
        """The push config a send carries, in v1.0's form; -32602 when it is not one."""
        raw = request.configuration.task_push_notification_config if request.configuration is not None else None
        if not raw:
            return None
        try:
            if self.is_v1:
                return push.TaskPushNotificationConfig.model_validate(raw)
            return push.config_from_legacy(push.LegacyPushConfig.model_validate(raw), None)
        except ValidationError as exc:
            raise ProtocolError.from_validation_error(exc, "configuration.taskPushNotificationConfig") from None

    def push_config(self, config: push.TaskPushNotificationConfig) -> dict[str, Any]:
        return config.to_wire() if self.is_v1 else push.config_to_legacy(config).to_wire()

    def push_target(self) -> tuple[str, str | None]:
        """The task and the config id a get or delete names (v0.3 may leave the id out)."""
        if self.is_v1:
            target = parse_params(self.call, push.GetTaskPushNotificationConfigRequest)
            return target.task_id, target.id
        legacy = parse_params(self.call, push.LegacyConfigParams)
        return legacy.id, legacy.push_notification_config_id

    def send_params(self, request: v1.SendMessageRequest) -> TaskSendParams:
        """The request as the task model's send; -32602 for what the model cannot hold (bytes that are not base64)."""
        try:
            return send_params_from_v1(request)
        except ValueError as exc:
            raise ProtocolError.invalid_param("message.parts", str(exc)) from None

    def stream(
        self, encoder: StreamEncoder, batches: AsyncIterator[list[StreamEvent]], ready: list[StreamEvent]
    ) -> Response:
        return SSEStreamResponse(_sse(self, encoder, batches, ready))


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
        """The extended card, for a caller the tokens know (a server offering one has tokens: create_app)."""
        if self.extended_card is None or exchange.caller is ANONYMOUS:
            raise no_extended_card()
        return exchange.answer(self.extended_card(exchange.request).to_wire())


async def _send(exchange: _Exchange) -> Response:
    request = exchange.send_request()
    config = request.configuration
    webhook = exchange.webhook(request)
    params = exchange.send_params(request)
    await _known(exchange, params.id)
    if config is not None and config.return_immediately:
        task = await exchange.manager.start(params, exchange.caller, webhook=webhook)
    else:
        task = await exchange.manager.send_in_caller_task(params, exchange.caller, webhook=webhook)
    return exchange.answer({"task": exchange.task(task)} if exchange.is_v1 else exchange.task(task))


async def _send_streaming(exchange: _Exchange) -> Response:
    request = exchange.send_request()
    webhook = exchange.webhook(request)
    params = exchange.send_params(request)
    await _known(exchange, params.id)
    opened: list[Task] = []
    batches = exchange.manager.subscribe_batches(params, exchange.caller, on_start=opened.append, webhook=webhook)
    try:
        first = await anext(batches)  # the run's first line, the working status, is the Task the stream opens with
    except BaseException:
        await batches.aclose()
        raise
    return exchange.stream(StreamEncoder(opened[0]), batches, first[1:])


async def _get(exchange: _Exchange) -> Response:
    query = parse_params(exchange.call, v1.GetTaskRequest)
    task = await exchange.manager.get(query.id, query.history_length, exchange.caller)
    return exchange.answer(exchange.task(task))


async def _cancel(exchange: _Exchange) -> Response:
    target = parse_params(exchange.call, v1.CancelTaskRequest)
    return exchange.answer(exchange.task(await exchange.manager.cancel(target.id, exchange.caller)))


async def _subscribe(exchange: _Exchange) -> Response:
    target = parse_params(exchange.call, v1.SubscribeToTaskRequest)
    task, last_seq = await exchange.manager.snapshot(target.id, exchange.caller)
    if task.status.state.is_terminal:
        raise ProtocolError(
            ErrorCode.UNSUPPORTED_OPERATION,
            f"task {target.id!r} is {task.status.state.value}: there is nothing to subscribe to; GetTask reads it",
        )
    batches = await exchange.manager.resubscribe_batches(target.id, last_seq, exchange.caller)
    return exchange.stream(StreamEncoder(task), batches, [])


async def _list(exchange: _Exchange) -> Response:
    query = parse_params(exchange.call, v1.ListTasksRequest)
    where = TaskFilter(
        session_id=query.context_id or None,
        state=STATE_FROM_V1[query.status] if query.status is not None else None,
        status_after=_utc_time(query.status_timestamp_after),
    )
    limit = query.page_size or v1.DEFAULT_PAGE_SIZE
    page = await exchange.manager.list_tasks(
        where, limit=limit, cursor=query.page_token or "", history_length=query.history_length, caller=exchange.caller
    )
    tasks = [task_to_v1(task, include_artifacts=query.include_artifacts).to_wire() for task in page.tasks]
    return exchange.answer(
        {"tasks": tasks, "nextPageToken": page.next_cursor, "pageSize": limit, "totalSize": page.total}
    )


async def _create_push(exchange: _Exchange) -> Response:
    if exchange.is_v1:
        config = parse_params(exchange.call, push.TaskPushNotificationConfig)
        if not config.task_id:
            raise ProtocolError.invalid_param("taskId", "missing", "name the task the webhook is for")
        task_id = config.task_id
    else:
        legacy = parse_params(exchange.call, push.LegacyTaskPushConfig)
        task_id = legacy.task_id
        config = push.config_from_legacy(legacy.push_notification_config, task_id)
    configs = await exchange.manager.push_configs(task_id, exchange.caller)
    return exchange.answer(exchange.push_config(await configs.create(config)))


async def _get_push(exchange: _Exchange) -> Response:
    task_id, config_id = exchange.push_target()
    configs = await exchange.manager.push_configs(task_id, exchange.caller)
    if config_id is None:  # v0.3: the task's config when it has one
        found = await configs.list()
        if not found:
            raise ProtocolError(ErrorCode.TASK_NOT_FOUND, f"task {task_id!r} has no push config")
        return exchange.answer(exchange.push_config(found[0]))
    return exchange.answer(exchange.push_config(await configs.get(config_id)))


async def _list_push(exchange: _Exchange) -> Response:
    if exchange.is_v1:
        task_id = parse_params(exchange.call, push.ListTaskPushNotificationConfigsRequest).task_id
    else:
        task_id = parse_params(exchange.call, push.LegacyConfigParams).id
    configs = await (await exchange.manager.push_configs(task_id, exchange.caller)).list()
    listed = [exchange.push_config(config) for config in configs]  # a task has few: one page
    return exchange.answer({"configs": listed} if exchange.is_v1 else listed)


async def _delete_push(exchange: _Exchange) -> Response:
    task_id, config_id = exchange.push_target()
    if config_id is None:
        raise ProtocolError.invalid_param("pushNotificationConfigId", "missing", "name the config to delete")
    await (await exchange.manager.push_configs(task_id, exchange.caller)).delete(config_id)
    return exchange.answer({} if exchange.is_v1 else None)


async def _known(exchange: _Exchange, task_id: str | None) -> None:
    """A message naming a task continues it: the caller's task (-32001 otherwise), not finished (-32004)."""
    if task_id is None:
        return
    task = await exchange.manager.get(task_id, 0, exchange.caller)
    if task.status.state.is_terminal:
        raise ProtocolError(
            ErrorCode.UNSUPPORTED_OPERATION,
            f"task {task_id!r} is {task.status.state.value} and takes no more messages; "
            "send the message without a taskId to start a new task (same contextId to stay in the conversation)",
        )


def _utc_time(value: str | None) -> str | None:
    """A client's timestamp as ``utc_now_iso`` writes them (so stored ones compare as text); -32602 if unreadable."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ProtocolError.invalid_param(
            "statusTimestampAfter", f"{value!r} is not an ISO 8601 time such as 2026-01-31T12:00:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def _sse(
    exchange: _Exchange, encoder: StreamEncoder, batches: AsyncIterator[list[StreamEvent]], ready: list[StreamEvent]
) -> AsyncGenerator[bytes, None]:
    """The opening Task, then each event, each a JSON-RPC response; a failure mid-stream ends it with an error event.

    The events ready together (``ready`` with the opening, then each batch) are written in one piece.
    """
    envelope = exchange.call.envelope

    def encoded(events: list[StreamEvent]) -> bytes:
        return b"".join(
            encode_event(orjson.dumps(envelope.wrap_result(exchange.event(encoder.encode(event))))) for event in events
        )

    try:
        yield encode_event(orjson.dumps(envelope.wrap_result(exchange.event(encoder.opening())))) + encoded(ready)
        async with aclosing(batches) as stream:  # type: ignore[type-var]
            async for batch in stream:
                yield encoded(batch)
    except Exception as exc:
        logger.exception("a task event stream broke off")
        error = ProtocolError(ErrorCode.INTERNAL_ERROR, f"the stream broke off: {type(exc).__name__}: {exc}")
        yield encode_event(orjson.dumps(envelope.wrap_error(error)), "error")


def _error(error: ProtocolError, envelope: Envelope, *, status: int = 200) -> Response:
    return json_response(envelope.wrap_error(error), status_code=status)
