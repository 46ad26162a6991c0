"""The one mapping between A2A v1.0 objects (v1.py) and the task model (protocol/task.py); v0.3 goes through v1.0.

What maps to what (docs/a2a.md has the whole table):

- Task ``id`` is the task's id, ``contextId`` its ``sessionId``; ``metadata`` is kept as is,
  ``handoff`` included, except the cost: the task model's (and the NDJSON binding's)
  ``cost_usd`` is ``costUsd`` here, as every other key on these bindings is camelCase;
  ``cost_usd`` is read too (a2a-sdk agents written for earlier Switchboards send it).
- States: ``TASK_STATE_<STATE>`` for each of ours; ``TASK_STATE_REJECTED`` is read as
  ``failed`` and ``TASK_STATE_AUTH_REQUIRED`` as ``input-required`` (the task model has
  neither).
- Roles: ``ROLE_USER`` / ``ROLE_AGENT``. A message without a ``messageId`` of its own gets
  one derived from its task and place, so the same task always reads the same.
- Parts: ``text`` is a text part, ``data`` a data part (a value that is not an object is
  held as ``{"value": ...}``), ``raw`` / ``url`` a file part (``filename`` and
  ``mediaType`` its name and mime type). A text or data part's ``mediaType`` and
  ``filename`` are not kept.
- Artifacts: ours are numbered by ``index``; an artifact's ``artifactId`` is
  ``artifact-<index>``, and artifacts read from a peer are numbered in the order they come.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from typing import Any

from protocol.a2a import v1
from protocol.task import (
    Artifact,
    DataPart,
    FileContent,
    FilePart,
    Message,
    Part,
    Task,
    TaskSendParams,
    TaskState,
    TaskStatus,
    TextPart,
)

STATE_TO_V1: dict[TaskState, v1.TaskState] = {
    TaskState.SUBMITTED: "TASK_STATE_SUBMITTED",
    TaskState.WORKING: "TASK_STATE_WORKING",
    TaskState.INPUT_REQUIRED: "TASK_STATE_INPUT_REQUIRED",
    TaskState.COMPLETED: "TASK_STATE_COMPLETED",
    TaskState.CANCELED: "TASK_STATE_CANCELED",
    TaskState.FAILED: "TASK_STATE_FAILED",
}
STATE_FROM_V1: dict[str, TaskState] = {
    **{value: key for key, value in STATE_TO_V1.items()},
    "TASK_STATE_REJECTED": TaskState.FAILED,
    "TASK_STATE_AUTH_REQUIRED": TaskState.INPUT_REQUIRED,
}


COST_KEY = "costUsd"
"""A cost in metadata on the standard bindings; the task model and the NDJSON binding spell it ``cost_usd``."""
MODEL_COST_KEY = "cost_usd"


def artifact_id(index: int) -> str:
    return f"artifact-{index}"


# -- parts and messages -----------------------------------------------------------------


def part_to_v1(part: Part) -> v1.Part:
    if isinstance(part, TextPart):
        return v1.Part(text=part.text, metadata=part.metadata)
    if isinstance(part, DataPart):
        return v1.Part(data=part.data, metadata=part.metadata)
    file = part.file
    content = {"raw": file.bytes} if file.bytes is not None else {"url": file.uri}
    return v1.Part(**content, filename=file.name, media_type=file.mime_type, metadata=part.metadata)


def part_from_v1(part: v1.Part) -> Part:
    """The part in the task model; raises ValueError for ``raw`` that is not base64."""
    if part.text is not None:
        return TextPart(text=part.text, metadata=part.metadata)
    if part.raw is not None:
        file = FileContent(name=part.filename, mime_type=part.media_type, bytes=_standard_base64(part.raw))
        return FilePart(file=file, metadata=part.metadata)
    if part.url is not None:
        return FilePart(
            file=FileContent(name=part.filename, mime_type=part.media_type, uri=part.url), metadata=part.metadata
        )
    data = part.data if isinstance(part.data, dict) else {"value": part.data}
    return DataPart(data=data, metadata=part.metadata)


def message_to_v1(message: Message, *, message_id: str, task_id: str | None, context_id: str | None) -> v1.Message:
    """``message`` with its own ``messageId``, else ``message_id``."""
    return v1.Message(
        message_id=message.message_id or message_id,
        role="ROLE_USER" if message.role == "user" else "ROLE_AGENT",
        parts=[part_to_v1(part) for part in message.parts],
        context_id=context_id,
        task_id=task_id,
        metadata=message.metadata,
    )


def message_from_v1(message: v1.Message) -> Message:
    return Message(
        role="user" if message.role == "ROLE_USER" else "agent",
        message_id=message.message_id,
        parts=[part_from_v1(part) for part in message.parts],
        metadata=message.metadata,
    )


def new_message_id() -> str:
    return uuid.uuid4().hex


# -- status, artifacts, tasks -----------------------------------------------------------


def status_to_v1(status: TaskStatus, task_id: str, context_id: str | None) -> v1.TaskStatus:
    message = None
    if status.message is not None:
        message_id = _status_message_id(task_id, status)
        message = message_to_v1(status.message, message_id=message_id, task_id=task_id, context_id=context_id)
    return v1.TaskStatus(state=STATE_TO_V1[status.state], message=message, timestamp=status.timestamp)


def _status_message_id(task_id: str, status: TaskStatus) -> str:
    return f"{task_id}-status-{status.timestamp}"


def status_from_v1(status: v1.TaskStatus) -> TaskStatus:
    message = message_from_v1(status.message) if status.message is not None else None
    if status.timestamp:
        return TaskStatus(state=STATE_FROM_V1[status.state], message=message, timestamp=status.timestamp)
    return TaskStatus(state=STATE_FROM_V1[status.state], message=message)


def artifact_to_v1(artifact: Artifact) -> v1.Artifact:
    return v1.Artifact(
        artifact_id=artifact_id(artifact.index),
        name=artifact.name,
        description=artifact.description,
        parts=[part_to_v1(part) for part in artifact.parts],
        metadata=artifact.metadata,
    )


def artifact_from_v1(artifact: v1.Artifact, index: int) -> Artifact:
    return Artifact(
        index=index,
        name=artifact.name,
        description=artifact.description,
        parts=[part_from_v1(part) for part in artifact.parts],
        metadata=artifact.metadata,
    )


def metadata_to_v1(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    """The task model's metadata as the standard bindings spell it: ``costUsd`` for ``cost_usd``."""
    if not metadata or MODEL_COST_KEY not in metadata:
        return metadata or None
    return {(COST_KEY if key == MODEL_COST_KEY else key): value for key, value in metadata.items()}


def metadata_from_v1(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """The standard bindings' metadata in the task model: ``cost_usd`` for ``costUsd`` (which wins over both)."""
    if not metadata or COST_KEY not in metadata:
        return dict(metadata or {})
    cost = metadata[COST_KEY]
    return {**{key: value for key, value in metadata.items() if key != COST_KEY}, MODEL_COST_KEY: cost}


def task_to_v1(task: Task, *, include_artifacts: bool = True) -> v1.Task:
    """``include_artifacts=False`` leaves the field out (ListTasks by default)."""
    context_id = task.session_id
    history = None
    if task.history:
        history = [
            message_to_v1(message, message_id=f"{task.id}-{position}", task_id=task.id, context_id=context_id)
            for position, message in enumerate(task.history)
        ]
    return v1.Task(
        id=task.id,
        context_id=context_id,
        status=status_to_v1(task.status, task.id, context_id),
        artifacts=[artifact_to_v1(a) for a in task.artifacts] if include_artifacts else None,
        history=history,
        metadata=metadata_to_v1(task.metadata),
    )


def task_from_v1(task: v1.Task) -> Task:
    """The task as the task model holds it; raises ValueError for what it cannot hold (a part that is not base64)."""
    return Task(
        id=task.id,
        session_id=task.context_id or None,
        status=status_from_v1(task.status),
        artifacts=[artifact_from_v1(artifact, index) for index, artifact in enumerate(task.artifacts or [])],
        history=[message_from_v1(message) for message in task.history] if task.history is not None else None,
        metadata=metadata_from_v1(task.metadata),
    )


def bare_reply(task: Task) -> v1.Message | None:
    """The Message a new task amounts to when its agent answered with one and nothing else; None otherwise.

    That is a task ``completed`` with the agent's message as its status message and no
    artifact, no handoff: the agent returned a ``Message``. The reply is that status message,
    with the ``messageId`` GetTask shows for it, and no ``taskId`` (a bare answer starts no
    task the client follows).
    """
    status = task.status
    if (
        status.state is not TaskState.COMPLETED
        or status.message is None
        or task.artifacts
        or "handoff" in task.metadata
    ):
        return None
    return message_to_v1(
        status.message, message_id=_status_message_id(task.id, status), task_id=None, context_id=task.session_id
    )


def reply_task(message: v1.Message) -> Task:
    """A direct Message answer (no task) as the completed task it amounts to."""
    reply = message_from_v1(message)
    return Task(
        id=message.task_id or message.message_id,
        session_id=message.context_id,
        status=TaskStatus(state=TaskState.COMPLETED, message=reply),
        artifacts=[Artifact(index=0, parts=reply.parts)],
    )


# -- requests ---------------------------------------------------------------------------


def send_params_from_v1(request: v1.SendMessageRequest) -> TaskSendParams:
    """A SendMessage request as the task model's send: the message's ``taskId`` continues that task."""
    message = request.message
    config = request.configuration
    return TaskSendParams(
        id=message.task_id or None,
        session_id=message.context_id or None,
        message=message_from_v1(message),
        metadata=request.metadata,
        history_length=config.history_length if config is not None else None,
    )


def send_request_to_v1(params: TaskSendParams) -> v1.SendMessageRequest:
    """The send as a SendMessage request; ``params.id``, when given, is a task of the server's to continue."""
    message = message_to_v1(
        params.message, message_id=new_message_id(), task_id=params.id, context_id=params.session_id
    )
    configuration = None
    if params.history_length is not None:
        configuration = v1.SendMessageConfiguration(history_length=params.history_length)
    return v1.SendMessageRequest(message=message, configuration=configuration, metadata=params.metadata)


def _standard_base64(value: str) -> str:
    """ProtoJSON bytes may be standard or URL-safe base64, padded or not; the task model holds standard, padded."""
    text = value.strip().replace("-", "+").replace("_", "/")
    try:
        return base64.b64encode(base64.b64decode(text + "=" * (-len(text) % 4), validate=True)).decode()
    except (binascii.Error, ValueError):
        raise ValueError("raw: must be base64") from None


def cost_of(metadata: dict[str, Any] | None) -> Any:
    """The cost a piece of ``metadata`` reports, ``costUsd`` or else ``cost_usd`` (checked by whoever adds it up)."""
    if not metadata:
        return None
    return metadata.get(COST_KEY, metadata.get(MODEL_COST_KEY))
