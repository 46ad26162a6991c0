"""The TCK's scenario agent answers each scenario, named by the message id, as the TCK expects."""

from __future__ import annotations

import anyio
import pytest

from agent_server import MemoryTaskStore, TaskManager
from examples.tck_agent import agent
from protocol import Message, Task, TaskSendParams, TaskState
from protocol.task import DataPart, FilePart, TextPart

pytestmark = pytest.mark.anyio


async def _send(manager: TaskManager, message_id: str, text: str = "hi") -> Task:
    message = Message(role="user", message_id=message_id, parts=[TextPart(text=text)])
    return await manager.send(TaskSendParams(message=message))


async def test_each_scenario_gets_the_answer_its_message_id_names() -> None:
    manager = TaskManager(agent, MemoryTaskStore())
    with anyio.fail_after(30):
        async with manager.running():
            text = await _send(manager, "tck-artifact-text-1")
            data = await _send(manager, "tck-artifact-data-1")
            file_url = await _send(manager, "tck-artifact-file-url-1")
            file_bytes = await _send(manager, "tck-artifact-file-1")
            asking = await _send(manager, "tck-input-required-1")
            rejected = await _send(manager, "tck-reject-task-1")
            bare = await _send(manager, "tck-message-response-1")
            echoed = await _send(manager, "anything-else", "echo me")
    assert (
        isinstance(text.artifacts[0].parts[0], TextPart) and text.artifacts[0].parts[0].text == "Generated text content"
    )
    assert isinstance(data.artifacts[0].parts[0], DataPart) and data.artifacts[0].parts[0].data["count"] == 42
    url_part, bytes_part = file_url.artifacts[0].parts[0], file_bytes.artifacts[0].parts[0]
    assert isinstance(url_part, FilePart) and url_part.file.uri == "https://example.com/output.txt"
    assert isinstance(bytes_part, FilePart) and bytes_part.file.bytes and bytes_part.file.uri is None
    assert asking.status.state is TaskState.INPUT_REQUIRED
    assert rejected.status.state is TaskState.FAILED
    assert bare.status.state is TaskState.COMPLETED and not bare.artifacts
    assert bare.status.message is not None
    reply = bare.status.message.parts[0]
    assert isinstance(reply, TextPart) and reply.text == "Direct message response"
    echo = echoed.artifacts[0].parts[0]
    assert isinstance(echo, TextPart) and echo.text == "echo me"
