"""The standard A2A operations over the TaskManager, in v1.0's objects, for every binding to frame its own way.

A binding parses its request into the v1.0 model (protocol/a2a/v1.py), calls one of these
with the caller's principal, and writes what comes back in its own framing (a JSON-RPC
response, an HTTP+JSON answer, a gRPC message). So the rules live once: a message naming a task continues that
task (the caller's, not finished), ``returnImmediately`` answers as the run starts, a
stream opens with the Task, a finished task has nothing to subscribe to, and the
operations this server does not offer are refused with the same words on every binding.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agent_server.http.auth import Principal
from agent_server.stores import TaskFilter
from agent_server.tasks.manager import TaskManager
from protocol import ErrorCode, ProtocolError, StreamEvent, Task, TaskSendParams, encode_event
from protocol.a2a import StreamEncoder, send_params_from_v1, task_to_v1, v1
from protocol.a2a.mapping import STATE_FROM_V1, bare_reply

logger = logging.getLogger("agent_server")

Batches = AsyncGenerator[list[StreamEvent], None]


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
    params = await _send_params(manager, request, caller)
    config = request.configuration
    if config is not None and config.return_immediately:
        return await manager.start(params, caller)
    task = await manager.send_in_caller_task(params, caller)
    reply = bare_reply(task) if params.id is None else None
    return task if reply is None else reply


async def send_streaming(manager: TaskManager, request: v1.SendMessageRequest, caller: Principal) -> OpenStream:
    """``SendStreamingMessage``: the run started, its first line (the working status) read as the opening Task."""
    params = await _send_params(manager, request, caller)
    opened: list[Task] = []
    batches = manager.subscribe_batches(params, caller, on_start=opened.append)
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


def no_extended_card() -> ProtocolError:
    return ProtocolError(
        ErrorCode.UNSUPPORTED_OPERATION,
        "this agent has no extended card (its card says capabilities.extendedAgentCard is not offered)",
    )


def push_unsupported() -> ProtocolError:
    return ProtocolError(
        ErrorCode.PUSH_NOTIFICATION_NOT_SUPPORTED,
        "push notifications are not supported (the card says capabilities.pushNotifications: false); "
        "stream the task or poll GetTask",
    )


async def sse_events(
    opened: OpenStream,
    encode: Callable[[v1.StreamResponse], bytes],
    fail: Callable[[ProtocolError], bytes],
) -> AsyncGenerator[bytes, None]:
    """The stream as Server-Sent Events, for the bindings that stream over SSE (JSON-RPC, HTTP+JSON).

    Each ``data:`` is what ``encode`` makes of one StreamResponse; a failure mid-stream ends
    the stream with an ``error`` event, its ``data:`` what ``fail`` makes of the error. The
    events ready together (``ready`` with the opening, then each batch) are written in one
    piece, encoded as a batch so an artifact's last chunk in it says ``lastChunk``.
    """
    encoder = opened.encoder

    def encoded(events: list[StreamEvent]) -> bytes:
        return b"".join(encode_event(encode(response)) for response in encoder.encode_batch(events))

    try:
        yield encode_event(encode(encoder.opening())) + encoded(opened.ready)
        async with aclosing(opened.batches) as stream:
            async for batch in stream:
                yield encoded(batch)
    except Exception as exc:
        logger.exception("a task event stream broke off")
        error = ProtocolError(ErrorCode.INTERNAL_ERROR, f"the stream broke off: {type(exc).__name__}: {exc}")
        yield encode_event(fail(error), "error")


async def _send_params(manager: TaskManager, request: v1.SendMessageRequest, caller: Principal) -> TaskSendParams:
    """The request as the task model's send, refused where it cannot be served.

    -32003 for a push config; -32602 for what the model cannot hold (bytes that are not
    base64); a message naming a task continues it: the caller's task (-32001 otherwise),
    not finished (-32004).
    """
    config = request.configuration
    if config is not None and config.task_push_notification_config:
        raise push_unsupported()
    try:
        params = send_params_from_v1(request)
    except ValueError as exc:
        raise ProtocolError.invalid_param("message.parts", str(exc)) from None
    if params.id is not None:
        task = await manager.get(params.id, 0, caller)
        if task.status.state.is_terminal:
            raise ProtocolError(
                ErrorCode.UNSUPPORTED_OPERATION,
                f"task {params.id!r} is {task.status.state.value} and takes no more messages; "
                "send the message without a taskId to start a new task (same contextId to stay in the conversation)",
            )
    return params


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
