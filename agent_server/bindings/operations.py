"""The A2A v1.0 operations over the TaskManager, for one caller: what every standard binding does, in v1.0 shapes.

A binding reads a request in its own framing (a JSON-RPC envelope, a REST path and body),
hands it here as the v1.0 request object, and writes the answer back in its own framing.
So the rules are written once: a message naming a task continues the caller's task, a
finished task takes no more messages, ``returnImmediately``, what a list page holds, which
tasks can be subscribed to, and the refusals of what this server does not offer (push
notifications, the extended card). Ownership is the TaskManager's, by ``caller``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agent_server.http.auth import Principal
from agent_server.stores import TaskFilter
from agent_server.tasks.manager import TaskManager
from protocol import ErrorCode, ProtocolError, StreamEvent, Task, TaskSendParams, encode_event
from protocol.a2a import StreamEncoder, send_params_from_v1, task_to_v1, v1
from protocol.a2a.mapping import STATE_FROM_V1

logger = logging.getLogger("agent_server")


@dataclass(frozen=True)
class TaskStream:
    """A stream about to be sent: the Task it opens with (in ``encoder``), the events ready now, then the rest."""

    encoder: StreamEncoder
    ready: list[StreamEvent]
    batches: AsyncIterator[list[StreamEvent]]


@dataclass(frozen=True)
class Operations:
    """The operations one request may run: ``manager`` serves them, for ``caller``."""

    manager: TaskManager
    caller: Principal

    async def send(self, request: v1.SendMessageRequest) -> Task:
        """SendMessage: the task once terminal or ``input-required``; as it starts, with ``returnImmediately``."""
        params = await self._send_params(request)
        if request.configuration is not None and request.configuration.return_immediately:
            return await self.manager.start(params, self.caller)
        return await self.manager.send_in_caller_task(params, self.caller)

    async def stream(self, request: v1.SendMessageRequest) -> TaskStream:
        """SendStreamingMessage: the Task as the run starts, then its events until the final one."""
        params = await self._send_params(request)
        opened: list[Task] = []
        batches = self.manager.subscribe_batches(params, self.caller, on_start=opened.append)
        try:
            first = await anext(batches)  # the run's first line, the working status, is the Task the stream opens with
        except BaseException:
            await batches.aclose()
            raise
        return TaskStream(StreamEncoder(opened[0]), first[1:], batches)

    async def get(self, query: v1.GetTaskRequest) -> Task:
        return await self.manager.get(query.id, query.history_length, self.caller)

    async def cancel(self, task_id: str) -> Task:
        return await self.manager.cancel(task_id, self.caller)

    async def subscribe(self, task_id: str) -> TaskStream:
        """SubscribeToTask: the task now, then its events; a finished task has none (-32004)."""
        task, last_seq = await self.manager.snapshot(task_id, self.caller)
        if task.status.state.is_terminal:
            raise ProtocolError(
                ErrorCode.UNSUPPORTED_OPERATION,
                f"task {task_id!r} is {task.status.state.value}: there is nothing to subscribe to; GetTask reads it",
            )
        batches = await self.manager.resubscribe_batches(task_id, last_seq, self.caller)
        return TaskStream(StreamEncoder(task), [], batches)

    async def list(self, query: v1.ListTasksRequest) -> dict[str, Any]:
        """ListTasks: one page of the caller's tasks, as the ListTasksResponse's JSON."""
        where = TaskFilter(
            session_id=query.context_id or None,
            state=STATE_FROM_V1[query.status] if query.status is not None else None,
            status_after=_utc_time(query.status_timestamp_after),
        )
        limit = query.page_size or v1.DEFAULT_PAGE_SIZE
        page = await self.manager.list_tasks(
            where, limit=limit, cursor=query.page_token or "", history_length=query.history_length, caller=self.caller
        )
        tasks = [task_to_v1(task, include_artifacts=query.include_artifacts).to_wire() for task in page.tasks]
        return {"tasks": tasks, "nextPageToken": page.next_cursor, "pageSize": limit, "totalSize": page.total}

    async def _send_params(self, request: v1.SendMessageRequest) -> TaskSendParams:
        """The request as the task model's send, its task the caller's and still open; refusals as the spec says."""
        config = request.configuration
        if config is not None and config.task_push_notification_config:
            raise push_unsupported()
        try:
            params = send_params_from_v1(request)
        except ValueError as exc:  # bytes that are not base64
            raise ProtocolError.invalid_param("message.parts", str(exc)) from None
        if params.id is not None:
            await self._still_open(params.id)
        return params

    async def _still_open(self, task_id: str) -> None:
        """A message naming a task continues it: the caller's task (-32001 otherwise), not finished (-32004)."""
        task = await self.manager.get(task_id, 0, self.caller)
        if task.status.state.is_terminal:
            raise ProtocolError(
                ErrorCode.UNSUPPORTED_OPERATION,
                f"task {task_id!r} is {task.status.state.value} and takes no more messages; "
                "send the message without a taskId to start a new task (same contextId to stay in the conversation)",
            )


def push_unsupported() -> ProtocolError:
    return ProtocolError(
        ErrorCode.PUSH_NOTIFICATION_NOT_SUPPORTED,
        "push notifications are not supported (the card says capabilities.pushNotifications: false); "
        "stream the task or poll GetTask",
    )


def no_extended_card() -> ProtocolError:
    return ProtocolError(
        ErrorCode.UNSUPPORTED_OPERATION,
        "this agent has no extended card (its card says capabilities.extendedAgentCard is not offered)",
    )


async def sse_events(
    stream: TaskStream,
    encode: Callable[[v1.StreamResponse], bytes],
    fail: Callable[[ProtocolError], bytes],
) -> AsyncGenerator[bytes, None]:
    """The stream as Server-Sent Events, each ``data:`` what ``encode`` makes of an event; a failure mid-stream
    ends it with an ``error`` event, its ``data:`` what ``fail`` makes of the error.

    The events ready together (the opening with ``ready``, then each batch) are written in one piece.
    """
    encoder = stream.encoder

    def encoded(events: list[StreamEvent]) -> bytes:
        return b"".join(encode_event(encode(encoder.encode(event))) for event in events)

    try:
        yield encode_event(encode(encoder.opening())) + encoded(stream.ready)
        async with aclosing(stream.batches) as batches:  # type: ignore[type-var]
            async for batch in batches:
                yield encoded(batch)
    except Exception as exc:
        logger.exception("a task event stream broke off")
        error = ProtocolError(ErrorCode.INTERNAL_ERROR, f"the stream broke off: {type(exc).__name__}: {exc}")
        yield encode_event(fail(error), "error")


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
