"""What the tests that drive the real a2a-sdk 1.3 client share: a message to send, the events it brings, the text a
task or stream holds."""

from __future__ import annotations

from a2a.client import Client, ClientCallContext
from a2a.types import (
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
)


def message(text: str, **ids: str) -> SendMessageRequest:
    """A user's text message; ``ids``: ``task_id`` and ``context_id`` to continue a task."""
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id="m-" + text[:8], parts=[Part(text=text)], **ids)
    )


async def events_of(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


def text_of(task: Task) -> str:
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)


def streamed_text(events: list[StreamResponse]) -> str:
    """The text of a stream that opens with the Task: the Task's artifacts, then each artifact update's."""
    updates = (event.artifact_update.artifact for event in events if event.HasField("artifact_update"))
    return text_of(events[0].task) + "".join(part.text for artifact in updates for part in artifact.parts)


def message_for(
    text: str, *, task: Task | None = None, webhook: TaskPushNotificationConfig | None = None
) -> SendMessageRequest:
    """A user's text message, continuing ``task`` when given, with a ``webhook`` to hear the task's updates."""
    ids = {"task_id": task.id, "context_id": task.context_id} if task is not None else {}
    request = SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id="m-" + text, parts=[Part(text=text)], **ids)
    )
    if webhook is not None:
        request.configuration.CopyFrom(SendMessageConfiguration(task_push_notification_config=webhook))
    return request


async def final_task(client: Client, request: SendMessageRequest, context: ClientCallContext | None = None) -> Task:
    """The task as the last event of a send leaves it (a non-streaming client's one event)."""
    events = [event async for event in client.send_message(request, context=context)]
    return events[-1].task
