"""The A2A task model: messages and their parts, artifacts, task status and the task itself."""

from __future__ import annotations

import base64
import binascii
import enum
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from protocol._wire import WireModel


class TaskState(str, enum.Enum):
    SUBMITTED = "submitted"
    WORKING = "working"
    INPUT_REQUIRED = "input-required"
    COMPLETED = "completed"
    CANCELED = "canceled"
    FAILED = "failed"

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL_STATES


_TERMINAL_STATES = frozenset({TaskState.COMPLETED, TaskState.CANCELED, TaskState.FAILED})


class TextPart(WireModel):
    type: Literal["text"] = "text"
    text: str
    metadata: dict[str, Any] | None = None


class DataPart(WireModel):
    type: Literal["data"] = "data"
    data: dict[str, Any]
    metadata: dict[str, Any] | None = None


class FileContent(WireModel):
    """A file carried inline (``bytes``, base64) or by reference (``uri``): exactly one of the two."""

    name: str | None = None
    mime_type: str | None = None
    bytes: str | None = Field(default=None, description="base64 content")
    uri: str | None = None

    @field_validator("bytes")
    @classmethod
    def _is_base64(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError("must be standard base64 (A-Z, a-z, 0-9, +, /, = padding)") from None
        return value

    @model_validator(mode="after")
    def _bytes_or_uri(self) -> FileContent:
        if (self.bytes is None) == (self.uri is None):
            raise ValueError('a file needs exactly one of "bytes" (base64) or "uri"')
        return self


class FilePart(WireModel):
    type: Literal["file"] = "file"
    file: FileContent
    metadata: dict[str, Any] | None = None


def _part_type(value: Any) -> str | None:
    """A part without ``type`` but with ``text`` is a text part."""
    if isinstance(value, dict):
        kind = value.get("type")
        if kind is None and "text" in value:
            return "text"
        return kind
    return getattr(value, "type", None)


Part = Annotated[
    Annotated[TextPart, Tag("text")] | Annotated[DataPart, Tag("data")] | Annotated[FilePart, Tag("file")],
    Discriminator(
        _part_type,
        custom_error_type="invalid_part",
        custom_error_message="a part needs a type of 'text', 'data' or 'file'",
    ),
]


def parts_text(parts: list[Part]) -> str:
    """The concatenated text of the text parts, in order."""
    return "".join([p.text for p in parts if isinstance(p, TextPart)])


class Message(WireModel):
    role: Literal["user", "agent"] = "user"
    message_id: str | None = None
    """The sender's id of the message (A2A ``messageId``), kept as sent; the JSON-RPC binding derives one
    from the task for a message that has none."""
    parts: list[Part] = Field(min_length=1, fail_fast=True)
    """``fail_fast``: the first bad part is reported and the rest are not looked at, so a million bad parts
    cost what one does (listing them all blocked the server for seconds and answered megabytes)."""
    metadata: dict[str, Any] | None = None

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", parts=[TextPart(text=text)])

    @classmethod
    def agent(cls, text: str) -> Message:
        return cls(role="agent", parts=[TextPart(text=text)])

    @property
    def text(self) -> str:
        """The concatenated text of the text parts."""
        return parts_text(self.parts)


def utc_now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class TaskStatus(WireModel):
    state: TaskState
    message: Message | None = None
    timestamp: str = Field(default_factory=utc_now_iso)


class Artifact(WireModel):
    name: str | None = None
    description: str | None = None
    parts: list[Part]
    index: int = 0
    append: bool | None = None
    last_chunk: bool | None = None
    metadata: dict[str, Any] | None = None


class Task(WireModel):
    id: str
    session_id: str | None = None
    status: TaskStatus
    artifacts: list[Artifact] = Field(default_factory=list)
    history: list[Message] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def output_text(self) -> str:
        """All text the agent produced: artifacts in order, else the status message."""
        text = "".join(parts_text(a.parts) for a in self.artifacts)
        if not text and self.status.message is not None:
            text = self.status.message.text
        return text


class TaskSendParams(WireModel):
    id: str | None = None
    session_id: str | None = None
    message: Message
    metadata: dict[str, Any] | None = None
    history_length: int | None = Field(default=None, ge=0, strict=True)


class TaskQueryParams(WireModel):
    id: str = Field(min_length=1)
    history_length: int | None = Field(default=None, ge=0, strict=True)


class TaskIdParams(WireModel):
    id: str = Field(min_length=1)


class TaskResubscribeParams(WireModel):
    id: str = Field(min_length=1)
    after_seq: int = Field(default=-1, ge=-1, strict=True)
