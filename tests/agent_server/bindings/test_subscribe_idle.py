"""SubscribeToTask (v1.0) and ``tasks/resubscribe`` (v0.3) on an ``input-required`` task, through the a2a-sdk client.

The specification keeps a subscription open on any task that is not terminal: the stream
opens with the Task, waits, and follows the run the task's next message starts to its end,
or the cancel that closes the task. On an agent server and on the gateway (whose swarm
asks when its member asks).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anyio
import pytest
from a2a import types as sdk
from a2a.client import Client

from agent_server.testing import scripted_agent
from tests.support.a2a_clients import agent_and_gateway

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def faces() -> Iterator[dict[str, str]]:
    with agent_and_gateway(scripted_agent()) as urls:
        yield urls


def message(text: str, task: sdk.Task | None = None) -> sdk.SendMessageRequest:
    ids = {"task_id": task.id, "context_id": task.context_id} if task is not None else {}
    return sdk.SendMessageRequest(
        message=sdk.Message(role=sdk.Role.ROLE_USER, message_id=f"m-{text}", parts=[sdk.Part(text=text)], **ids)
    )


async def asked(client: Client) -> sdk.Task:
    events = [event async for event in client.send_message(message("ask which plan?"))]
    task = events[0].task
    assert events[-1].status_update.status.state == sdk.TaskState.TASK_STATE_INPUT_REQUIRED
    return task


def state_of(event: sdk.StreamResponse) -> int:
    return event.task.status.state if event.HasField("task") else event.status_update.status.state


async def test_a_subscription_to_an_input_required_task_follows_its_next_run_to_the_end(sdk_client: Client) -> None:
    task = await asked(sdk_client)
    subscription = sdk_client.subscribe(sdk.SubscribeToTaskRequest(id=task.id))
    opening = await anext(subscription)
    assert opening.task.id == task.id and opening.task.status.state == sdk.TaskState.TASK_STATE_INPUT_REQUIRED
    async with anyio.create_task_group() as replies:
        replies.start_soon(lambda: _drain(sdk_client.send_message(message("the big one", task))))
        with anyio.fail_after(20):
            rest = [event async for event in subscription]
    assert rest, "the stream stayed open for the reply's run"
    assert state_of(rest[-1]) == sdk.TaskState.TASK_STATE_COMPLETED
    assert any(
        "got" in part.text
        for event in rest
        if event.HasField("artifact_update")
        for part in event.artifact_update.artifact.parts
    )


async def test_a_subscription_to_an_input_required_task_ends_with_its_cancel(sdk_client: Client) -> None:
    task = await asked(sdk_client)
    subscription = sdk_client.subscribe(sdk.SubscribeToTaskRequest(id=task.id))
    await anext(subscription)
    canceled = await sdk_client.cancel_task(sdk.CancelTaskRequest(id=task.id))
    assert canceled.status.state == sdk.TaskState.TASK_STATE_CANCELED
    with anyio.fail_after(20):
        rest = [event async for event in subscription]
    assert rest and state_of(rest[-1]) == sdk.TaskState.TASK_STATE_CANCELED


async def _drain(stream: AsyncIterator[sdk.StreamResponse]) -> None:
    async for _ in stream:
        pass
