"""A2A v0.3 in its JSON form, and its translation to and from v1.0 (protocol/a2a/v1.py).

v0.3 spells the same objects differently: every object says what it is in ``kind``,
roles and states are lowercase (``user``, ``input-required``), a part is
``{"kind": "text" | "file" | "data", ...}`` with files as ``{"name", "mimeType", "bytes" |
"uri"}``, and a status update carries ``final``. The translation is one function per
object each way; what the task model makes of them is mapping.py's business, through v1.0.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from protocol._wire import WireModel
from protocol.a2a import v1

Count = Annotated[int, Field(ge=0, strict=True)]
TaskState = Literal[
    "submitted", "working", "input-required", "completed", "canceled", "failed", "rejected", "auth-required", "unknown"
]

_STATE_TO_V1: dict[str, v1.TaskState] = {
    "submitted": "TASK_STATE_SUBMITTED",
    "working": "TASK_STATE_WORKING",
    "input-required": "TASK_STATE_INPUT_REQUIRED",
    "completed": "TASK_STATE_COMPLETED",
    "canceled": "TASK_STATE_CANCELED",
    "failed": "TASK_STATE_FAILED",
    "rejected": "TASK_STATE_REJECTED",
    "auth-required": "TASK_STATE_AUTH_REQUIRED",
}
_STATE_FROM_V1: dict[str, TaskState] = {value: key for key, value in _STATE_TO_V1.items()}  # type: ignore[misc]


class TextPart(WireModel):
    kind: Literal["text"] = "text"
    text: str
    metadata: dict[str, Any] | None = None


class FileContent(WireModel):
    name: str | None = None
    mime_type: str | None = None
    bytes: str | None = None
    uri: str | None = None

    @model_validator(mode="after")
    def _bytes_or_uri(self) -> FileContent:
        if (self.bytes is None) == (self.uri is None):
            raise ValueError('a file needs exactly one of "bytes" (base64) or "uri"')
        return self


class FilePart(WireModel):
    kind: Literal["file"] = "file"
    file: FileContent
    metadata: dict[str, Any] | None = None


class DataPart(WireModel):
    kind: Literal["data"] = "data"
    data: dict[str, Any]
    metadata: dict[str, Any] | None = None


def _part_kind(value: Any) -> str | None:
    return value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)


Part = Annotated[
    Annotated[TextPart, Tag("text")] | Annotated[FilePart, Tag("file")] | Annotated[DataPart, Tag("data")],
    Discriminator(
        _part_kind,
        custom_error_type="invalid_part",
        custom_error_message="a part needs a kind of 'text', 'file' or 'data'",
    ),
]


class Message(WireModel):
    kind: Literal["message"] = "message"
    message_id: str = Field(min_length=1)
    role: Literal["user", "agent"]
    parts: list[Part] = Field(min_length=1, fail_fast=True)
    context_id: str | None = None
    task_id: str | None = None
    metadata: dict[str, Any] | None = None
    extensions: list[str] | None = None
    reference_task_ids: list[str] | None = None


class TaskStatus(WireModel):
    state: TaskState
    message: Message | None = None
    timestamp: str | None = None


class Artifact(WireModel):
    artifact_id: str
    name: str | None = None
    description: str | None = None
    parts: list[Part] = Field(fail_fast=True)
    metadata: dict[str, Any] | None = None
    extensions: list[str] | None = None


class Task(WireModel):
    kind: Literal["task"] = "task"
    id: str
    context_id: str | None = None
    status: TaskStatus
    artifacts: list[Artifact] | None = None
    history: list[Message] | None = None
    metadata: dict[str, Any] | None = None


class TaskStatusUpdateEvent(WireModel):
    kind: Literal["status-update"] = "status-update"
    task_id: str
    context_id: str | None = None
    status: TaskStatus
    final: bool = False
    metadata: dict[str, Any] | None = None


class TaskArtifactUpdateEvent(WireModel):
    kind: Literal["artifact-update"] = "artifact-update"
    task_id: str
    context_id: str | None = None
    artifact: Artifact
    append: bool | None = None
    last_chunk: bool | None = None
    metadata: dict[str, Any] | None = None


StreamResult = Annotated[
    Annotated[Task, Tag("task")]
    | Annotated[Message, Tag("message")]
    | Annotated[TaskStatusUpdateEvent, Tag("status-update")]
    | Annotated[TaskArtifactUpdateEvent, Tag("artifact-update")],
    Discriminator(
        _part_kind,
        custom_error_type="invalid_result",
        custom_error_message="a result needs a kind of 'task', 'message', 'status-update' or 'artifact-update'",
    ),
]


class MessageSendConfiguration(WireModel):
    accepted_output_modes: list[str] | None = None
    blocking: bool | None = None
    history_length: Count | None = None
    push_notification_config: dict[str, Any] | None = None


class MessageSendParams(WireModel):
    message: Message
    configuration: MessageSendConfiguration | None = None
    metadata: dict[str, Any] | None = None


class TaskQueryParams(WireModel):
    id: str = Field(min_length=1)
    history_length: Count | None = None
    metadata: dict[str, Any] | None = None


class TaskIdParams(WireModel):
    id: str = Field(min_length=1)
    metadata: dict[str, Any] | None = None


# -- to v1.0 --------------------------------------------------------------------------


def part_to_v1(part: TextPart | FilePart | DataPart) -> v1.Part:
    if isinstance(part, TextPart):
        return v1.Part(text=part.text, metadata=part.metadata)
    if isinstance(part, DataPart):
        return v1.Part(data=part.data, metadata=part.metadata)
    file = part.file
    content = {"raw": file.bytes} if file.bytes is not None else {"url": file.uri}
    return v1.Part(**content, filename=file.name, media_type=file.mime_type, metadata=part.metadata)


def message_to_v1(message: Message) -> v1.Message:
    return v1.Message(
        message_id=message.message_id,
        role="ROLE_USER" if message.role == "user" else "ROLE_AGENT",
        parts=[part_to_v1(part) for part in message.parts],
        context_id=message.context_id,
        task_id=message.task_id,
        metadata=message.metadata,
        extensions=message.extensions,
        reference_task_ids=message.reference_task_ids,
    )


def status_to_v1(status: TaskStatus) -> v1.TaskStatus:
    if status.state == "unknown":
        raise ValueError("a task in state 'unknown' has no A2A v1.0 equivalent")
    message = message_to_v1(status.message) if status.message else None
    return v1.TaskStatus(state=_STATE_TO_V1[status.state], message=message, timestamp=status.timestamp)


def artifact_to_v1(artifact: Artifact) -> v1.Artifact:
    return v1.Artifact(
        artifact_id=artifact.artifact_id,
        name=artifact.name,
        description=artifact.description,
        parts=[part_to_v1(part) for part in artifact.parts],
        metadata=artifact.metadata,
        extensions=artifact.extensions,
    )


def task_to_v1(task: Task) -> v1.Task:
    return v1.Task(
        id=task.id,
        context_id=task.context_id,
        status=status_to_v1(task.status),
        artifacts=[artifact_to_v1(a) for a in task.artifacts] if task.artifacts is not None else None,
        history=[message_to_v1(m) for m in task.history] if task.history is not None else None,
        metadata=task.metadata,
    )


def result_to_v1(result: Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent) -> v1.StreamResponse:
    """A stream result as the v1.0 event it is."""
    if isinstance(result, Task):
        return v1.StreamResponse(task=task_to_v1(result))
    if isinstance(result, Message):
        return v1.StreamResponse(message=message_to_v1(result))
    if isinstance(result, TaskStatusUpdateEvent):
        update = v1.TaskStatusUpdateEvent(
            task_id=result.task_id,
            context_id=result.context_id,
            status=status_to_v1(result.status),
            metadata=result.metadata,
        )
        return v1.StreamResponse(status_update=update)
    chunk = v1.TaskArtifactUpdateEvent(
        task_id=result.task_id,
        context_id=result.context_id,
        artifact=artifact_to_v1(result.artifact),
        append=result.append,
        last_chunk=result.last_chunk,
        metadata=result.metadata,
    )
    return v1.StreamResponse(artifact_update=chunk)


def send_params_to_v1(params: MessageSendParams) -> v1.SendMessageRequest:
    config = params.configuration
    configuration = None
    if config is not None:
        configuration = v1.SendMessageConfiguration(
            accepted_output_modes=config.accepted_output_modes,
            task_push_notification_config=config.push_notification_config,
            history_length=config.history_length,
            return_immediately=config.blocking is False,
        )
    return v1.SendMessageRequest(
        message=message_to_v1(params.message), configuration=configuration, metadata=params.metadata
    )


# -- from v1.0 ------------------------------------------------------------------------


def part_from_v1(part: v1.Part) -> TextPart | FilePart | DataPart:
    if part.text is not None:
        return TextPart(text=part.text, metadata=part.metadata)
    if part.raw is not None or part.url is not None:
        file = FileContent(name=part.filename, mime_type=part.media_type, bytes=part.raw, uri=part.url)
        return FilePart(file=file, metadata=part.metadata)
    data = part.data if isinstance(part.data, dict) else {"value": part.data}
    return DataPart(data=data, metadata=part.metadata)


def message_from_v1(message: v1.Message) -> Message:
    return Message(
        message_id=message.message_id,
        role="user" if message.role == "ROLE_USER" else "agent",
        parts=[part_from_v1(part) for part in message.parts],
        context_id=message.context_id,
        task_id=message.task_id,
        metadata=message.metadata,
        extensions=message.extensions,
        reference_task_ids=message.reference_task_ids,
    )


def status_from_v1(status: v1.TaskStatus) -> TaskStatus:
    message = message_from_v1(status.message) if status.message else None
    return TaskStatus(state=_STATE_FROM_V1[status.state], message=message, timestamp=status.timestamp)


def artifact_from_v1(artifact: v1.Artifact) -> Artifact:
    return Artifact(
        artifact_id=artifact.artifact_id,
        name=artifact.name,
        description=artifact.description,
        parts=[part_from_v1(part) for part in artifact.parts],
        metadata=artifact.metadata,
        extensions=artifact.extensions,
    )


def task_from_v1(task: v1.Task) -> Task:
    return Task(
        id=task.id,
        context_id=task.context_id,
        status=status_from_v1(task.status),
        artifacts=[artifact_from_v1(a) for a in task.artifacts] if task.artifacts is not None else None,
        history=[message_from_v1(m) for m in task.history] if task.history is not None else None,
        metadata=task.metadata,
    )


def event_from_v1(event: v1.StreamResponse) -> Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent:
    """A v1.0 stream event as v0.3 sends it; a status update is ``final`` at a terminal or interrupted state."""
    if event.task is not None:
        return task_from_v1(event.task)
    if event.message is not None:
        return message_from_v1(event.message)
    if event.status_update is not None:
        update = event.status_update
        return TaskStatusUpdateEvent(
            task_id=update.task_id,
            context_id=update.context_id,
            status=status_from_v1(update.status),
            final=update.status.state in v1.TERMINAL_STATES or update.status.state in v1.INTERRUPTED_STATES,
            metadata=update.metadata,
        )
    chunk = event.artifact_update
    assert chunk is not None
    return TaskArtifactUpdateEvent(
        task_id=chunk.task_id,
        context_id=chunk.context_id,
        artifact=artifact_from_v1(chunk.artifact),
        append=chunk.append,
        last_chunk=chunk.last_chunk,
        metadata=chunk.metadata,
    )


def send_params_from_v1(request: v1.SendMessageRequest) -> MessageSendParams:
    config = request.configuration
    configuration = None
    if config is not None:
        configuration = MessageSendConfiguration(
            accepted_output_modes=config.accepted_output_modes,
            blocking=not config.return_immediately,
            history_length=config.history_length,
            push_notification_config=config.task_push_notification_config,
        )
    return MessageSendParams(
        message=message_from_v1(request.message), configuration=configuration, metadata=request.metadata
    )
