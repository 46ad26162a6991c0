"""What the tests that drive the real a2a-sdk 1.3 client share: a message to send, the text a task or stream holds."""

from __future__ import annotations

from a2a.types import Message, Part, Role, SendMessageRequest, StreamResponse, Task


def message(text: str, **ids: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id="m-" + text[:8], parts=[Part(text=text)], **ids)
    )


def text_of(task: Task) -> str:
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)


def streamed_text(events: list[StreamResponse]) -> str:
    """The text of a stream that opens with the Task: the Task's artifacts, then each artifact update's."""
    updates = (event.artifact_update.artifact for event in events if event.HasField("artifact_update"))
    return text_of(events[0].task) + "".join(part.text for artifact in updates for part in artifact.parts)
