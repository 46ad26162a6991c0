"""The standard A2A operations over the TaskManager, in v1.0's objects, for every binding to frame its own way.

A binding parses its request into the v1.0 model (protocol/a2a/v1.py), calls one of these
with the caller's principal, and writes what comes back in its own framing (a JSON-RPC
response, an HTTP+JSON answer, a gRPC message). So the rules live once: a message naming a
task continues that task (the caller's, not finished), ``returnImmediately`` answers as the run starts, a
stream opens with the Task, a finished task has nothing to subscribe to, a task's push
configs are its owner's (agent_server/push/), the extended card is for a caller the tokens
know, and what this server does not offer is refused with the same words on every binding.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from agent_server.http.auth import ANONYMOUS, Principal
from agent_server.stores import TaskFilter
from agent_server.tasks.manager import TaskManager
from agent_server.tasks.turns import repeats
from protocol import ErrorCode, ProtocolError, StreamEvent, Task, TaskSendParams, encode_event
from protocol.a2a import StreamEncoder, push, send_params_from_v1, task_to_v1, v1
from protocol.a2a.mapping import STATE_FROM_V1, bare_reply
from protocol.card import AgentCard

logger = logging.getLogger("agent_server")

Batches = AsyncGenerator[list[StreamEvent], None]
Admit = Callable[[Principal], Awaitable[None]]
"""Whether a caller's request may go on: raises the ProtocolError that refuses it (a token over its rate, say)."""
Tenants = Callable[[str], Awaitable[TaskManager]]
"""The TaskManager serving a tenant of an endpoint that serves several agents; a ProtocolError (404) for one it
does not know."""
CardOf = Callable[[], AgentCard]
"""The extended card as it stands now (built when asked for: it names the gRPC port bound at start)."""


@dataclass(frozen=True)
class OpenStream:
    """A stream about to be written: its encoder (which opens with the Task), the events ready with the opening,
    then the batches of the rest (the caller closes them)."""

    encoder: StreamEncoder
    ready: list[StreamEvent]
    batches: Batches


async def send(manager: TaskManager, request: v1.SendMessageRequest, caller: Principal) -> Task | v1.Message:
    """``SendMessage``: the task once terminal or ``input-required``, or as it starts with ``returnImmediately``.

    A new task whose agent answered with a bare Message and nothing else is answered with that
    Message (``bare_reply``); the task is kept all the same, as the NDJSON binding has it.
    """
    params, webhook = await _send_params(manager, request, caller)
    config = request.configuration
    if config is not None and config.return_immediately:
        return await manager.start(params, caller, webhook=webhook)
    task = await manager.send_in_caller_task(params, caller, webhook=webhook)
    reply = bare_reply(task) if params.id is None else None
    return task if reply is None else reply


async def send_streaming(manager: TaskManager, request: v1.SendMessageRequest, caller: Principal) -> OpenStream:
    """``SendStreamingMessage``: the run started, its first line (the working status) read as the opening Task."""
    params, webhook = await _send_params(manager, request, caller)
    opened: list[Task] = []
    batches = manager.subscribe_batches(params, caller, on_start=opened.append, webhook=webhook)
    try:
        first = await anext(batches)
    except BaseException:
        await batches.aclose()
        raise
    return OpenStream(StreamEncoder(opened[0]), first[1:], batches)


async def subscribe(manager: TaskManager, task_id: str, caller: Principal) -> OpenStream:
    """``SubscribeToTask``: the task now, then its events, waiting through ``input-required``; -32004 if finished."""
    task, last_seq = await manager.snapshot(task_id, caller)
    if task.status.state.is_terminal:
        raise ProtocolError(
            ErrorCode.UNSUPPORTED_OPERATION,
            f"task {task_id!r} is {task.status.state.value}: there is nothing to subscribe to; GetTask reads it",
        )
    batches = await manager.follow_batches(task_id, last_seq, caller)
    return OpenStream(StreamEncoder(task), [], batches)


async def list_tasks(manager: TaskManager, query: v1.ListTasksRequest, caller: Principal) -> dict[str, Any]:
    """``ListTasks``: one page of the caller's tasks, as the ListTasksResponse's JSON."""
    where = TaskFilter(
        session_id=query.context_id or None,
        state=STATE_FROM_V1[query.status] if query.status is not None else None,
        status_after=_utc_time(query.status_timestamp_after),
    )
    limit = query.page_size or v1.DEFAULT_PAGE_SIZE
    page = await manager.list_tasks(
        where, limit=limit, cursor=query.page_token or "", history_length=query.history_length, caller=caller
    )
    tasks = [task_to_v1(task, include_artifacts=query.include_artifacts).to_wire() for task in page.tasks]
    return {"tasks": tasks, "nextPageToken": page.next_cursor, "pageSize": limit, "totalSize": page.total}


async def create_push_config(
    manager: TaskManager, config: push.TaskPushNotificationConfig, caller: Principal
) -> push.TaskPushNotificationConfig:
    """``CreateTaskPushNotificationConfig``: the config kept for its task (its id given or made); -32602 without one."""
    if not config.task_id:
        raise ProtocolError.invalid_param("taskId", "missing", "name the task the webhook is for")
    return await (await manager.push_configs(config.task_id, caller)).create(config)


async def get_push_config(
    manager: TaskManager, task_id: str, config_id: str | None, caller: Principal
) -> push.TaskPushNotificationConfig:
    """``GetTaskPushNotificationConfig``; without an id (v0.3 allows it) the task's first config."""
    configs = await manager.push_configs(task_id, caller)
    if config_id is not None:
        return await configs.get(config_id)
    found = await configs.list()
    if not found:
        raise ProtocolError(ErrorCode.TASK_NOT_FOUND, f"task {task_id!r} has no push config")
    return found[0]


async def list_push_configs(
    manager: TaskManager, task_id: str, caller: Principal
) -> list[push.TaskPushNotificationConfig]:
    """``ListTaskPushNotificationConfigs``: every config of the task (a task has few: one page)."""
    return await (await manager.push_configs(task_id, caller)).list()


async def delete_push_config(manager: TaskManager, task_id: str, config_id: str | None, caller: Principal) -> None:
    """``DeleteTaskPushNotificationConfig``; -32602 when the request names no config."""
    if not config_id:
        raise ProtocolError.invalid_param("pushNotificationConfigId", "missing", "name the config to delete")
    await (await manager.push_configs(task_id, caller)).delete(config_id)


def extended_card(card: CardOf | None, caller: Principal) -> AgentCard:
    """``GetExtendedAgentCard``: for a caller the tokens know (a server offering one has tokens: create_app)."""
    if card is None or caller is ANONYMOUS:
        raise ProtocolError(
            ErrorCode.UNSUPPORTED_OPERATION,
            "this agent has no extended card for this caller (its card does not say "
            "capabilities.extendedAgentCard, or the call carries no token)",
        )
    return card()


async def sse_events(
    opened: OpenStream,
    encode: Callable[[dict[str, Any]], bytes],
    fail: Callable[[ProtocolError], bytes],
    *,
    form: Callable[[v1.StreamResponse], dict[str, Any]] | None = None,
) -> AsyncGenerator[bytes, None]:
    """The stream as Server-Sent Events, for the bindings that stream over SSE (JSON-RPC, HTTP+JSON).

    Each ``data:`` is what ``encode`` makes of one StreamResponse's wire JSON: v1.0's as it
    is (``StreamEncoder.encode_batch_wire``), or what ``form`` makes of the model (a
    translation to v0.3). A failure mid-stream ends the stream with an ``error`` event, its
    ``data:`` what ``fail`` makes of the error. The events ready together (``ready`` with the
    opening, then each batch) are written in one piece, encoded as a batch so an artifact's
    last chunk in it says ``lastChunk``.
    """
    encoder = opened.encoder

    def encoded(events: list[StreamEvent]) -> bytes:
        if form is None:
            wires = encoder.encode_batch_wire(events)
        else:
            wires = [form(response) for response in encoder.encode_batch(events)]
        return b"".join([encode_event(encode(wire)) for wire in wires])

    opening = encoder.opening()
    try:
        yield encode_event(encode(opening.to_wire() if form is None else form(opening))) + encoded(opened.ready)
        async with aclosing(opened.batches) as stream:
            async for batch in stream:
                yield encoded(batch)
    except Exception as exc:
        logger.exception("a task event stream broke off")
        error = ProtocolError(ErrorCode.INTERNAL_ERROR, f"the stream broke off: {type(exc).__name__}: {exc}")
        yield encode_event(fail(error), "error")


async def _send_params(
    manager: TaskManager, request: v1.SendMessageRequest, caller: Principal
) -> tuple[TaskSendParams, push.TaskPushNotificationConfig | None]:
    """The request as the task model's send and the webhook it carries, refused where it cannot be served.

    -32602 for what the model cannot hold (bytes that are not base64, a config that is not
    one); a message naming a task continues it: the caller's task (-32001 otherwise), not
    finished (-32004), unless it repeats the message that task's latest turn began with (answered as
    it is). The task manager refuses a webhook where push is off (-32003).
    """
    webhook = _webhook(request)
    try:
        params = send_params_from_v1(request)
    except ValueError as exc:
        raise ProtocolError.invalid_param("message.parts", str(exc)) from None
    if params.id is not None:
        task = await manager.get(params.id, 0, caller)
        if task.status.state.is_terminal and not repeats(await manager.get(params.id, None, caller), params.message):
            raise ProtocolError(
                ErrorCode.UNSUPPORTED_OPERATION,
                f"task {params.id!r} is {task.status.state.value} and takes no more messages; "
                "send the message without a taskId to start a new task (same contextId to stay in the conversation)",
            )
    return params, webhook


def _webhook(request: v1.SendMessageRequest) -> push.TaskPushNotificationConfig | None:
    """The push config a send carries (``configuration.taskPushNotificationConfig``); -32602 when it is not one."""
    raw = request.configuration.task_push_notification_config if request.configuration is not None else None
    if not raw:
        return None
    try:
        return push.TaskPushNotificationConfig.model_validate(raw)
    except ValidationError as exc:
        raise ProtocolError.from_validation_error(exc, "configuration.taskPushNotificationConfig") from None


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
