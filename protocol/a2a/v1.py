"""A2A v1.0 in its JSON form (ProtoJSON of the protocol's proto): the objects and requests read and written here.

Field names are camelCase on the wire (snake_case accepted too, as ProtoJSON does); enums
are their proto names (``ROLE_USER``, ``TASK_STATE_COMPLETED``); a part holds exactly one of
``text``, ``raw`` (base64), ``url`` or ``data``; unknown fields are ignored. Only what the
JSON-RPC binding carries is modelled (no push-notification configs, no security objects).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from protocol._wire import WireModel

Count = Annotated[int, Field(ge=0, strict=True)]
Role = Literal["ROLE_USER", "ROLE_AGENT"]
TaskState = Literal[
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_AUTH_REQUIRED",
]
TERMINAL_STATES = frozenset({"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"})
INTERRUPTED_STATES = frozenset({"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"})
"""A stream ends at a terminal or an interrupted state."""

_CONTENT = ("text", "raw", "url", "data")

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100
"""ListTasks pages: the size when none is asked for, and the largest one (the range the specification gives)."""


class Part(WireModel):
    text: str | None = None
    raw: str | None = Field(default=None, description="base64")
    url: str | None = None
    data: Any = None
    metadata: dict[str, Any] | None = None
    filename: str | None = None
    media_type: str | None = None

    @model_validator(mode="after")
    def _one_content(self) -> Part:
        given = [name for name in _CONTENT if name in self.model_fields_set and getattr(self, name) is not None]
        if len(given) != 1:
            found = ", ".join(given) or "none"
            raise ValueError(f"a part holds exactly one of text, raw, url or data (found: {found})")
        return self


class Message(WireModel):
    message_id: str = Field(min_length=1)
    role: Role
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
    id: str
    context_id: str | None = None
    status: TaskStatus
    artifacts: list[Artifact] | None = None
    history: list[Message] | None = None
    metadata: dict[str, Any] | None = None


class TaskStatusUpdateEvent(WireModel):
    task_id: str
    context_id: str | None = None
    status: TaskStatus
    metadata: dict[str, Any] | None = None


class TaskArtifactUpdateEvent(WireModel):
    task_id: str
    context_id: str | None = None
    artifact: Artifact
    append: bool | None = None
    last_chunk: bool | None = None
    metadata: dict[str, Any] | None = None


class _OneOf(WireModel):
    @model_validator(mode="after")
    def _exactly_one(self) -> _OneOf:
        given = [name for name in type(self).model_fields if getattr(self, name) is not None]
        if len(given) != 1:
            names = ", ".join(field.alias or name for name, field in type(self).model_fields.items())
            raise ValueError(f"exactly one of {names} is expected (found {len(given)})")
        return self


class StreamResponse(_OneOf):
    """One event of a stream: a task, a message, a status update or an artifact update."""

    task: Task | None = None
    message: Message | None = None
    status_update: TaskStatusUpdateEvent | None = None
    artifact_update: TaskArtifactUpdateEvent | None = None


class SendMessageResponse(_OneOf):
    task: Task | None = None
    message: Message | None = None


class SendMessageConfiguration(WireModel):
    accepted_output_modes: list[str] | None = None
    task_push_notification_config: dict[str, Any] | None = None
    history_length: Count | None = None
    return_immediately: bool = False


class SendMessageRequest(WireModel):
    tenant: str | None = None
    message: Message
    configuration: SendMessageConfiguration | None = None
    metadata: dict[str, Any] | None = None


class GetTaskRequest(WireModel):
    tenant: str | None = None
    id: str = Field(min_length=1)
    history_length: Count | None = None


class ListTasksRequest(WireModel):
    tenant: str | None = None
    context_id: str | None = None
    status: TaskState | None = None
    page_size: Annotated[int, Field(ge=1, le=MAX_PAGE_SIZE, strict=True)] | None = None
    page_token: str | None = None
    history_length: Count | None = None
    status_timestamp_after: str | None = None
    include_artifacts: bool = False

    @field_validator("status", mode="before")
    @classmethod
    def _unspecified_is_any(cls, value: Any) -> Any:
        return None if value in ("TASK_STATE_UNSPECIFIED", "") else value


class CancelTaskRequest(WireModel):
    tenant: str | None = None
    id: str = Field(min_length=1)
    metadata: dict[str, Any] | None = None


class SubscribeToTaskRequest(WireModel):
    tenant: str | None = None
    id: str = Field(min_length=1)
