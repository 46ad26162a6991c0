"""What the tests driving the real a2a-sdk 1.3 client share: a message to send, the events it brings, a task's text."""

from __future__ import annotations

from a2a.client import Client
from a2a.types import Message, Part, Role, SendMessageRequest, StreamResponse, Task


def message(text: str, **ids: str) -> SendMessageRequest:
    """A user's text message; ``ids``: ``task_id`` and ``context_id`` to continue a task."""
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id="m-" + text[:8], parts=[Part(text=text)], **ids)
    )


async def events_of(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


def text_of(task: Task) -> str:
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)
