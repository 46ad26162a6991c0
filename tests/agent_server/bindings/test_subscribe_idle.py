"""SubscribeToTask (v1.0) and ``tasks/resubscribe`` (v0.3) on an ``input-required`` task, through the a2a-sdk client.

The specification keeps a subscription open on any task that is not terminal: the stream
opens with the Task, waits, and follows the run the task's next message starts to its end,
or the cancel that closes the task. On an agent server and on the gateway (whose swarm
asks when its member asks).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anyio
import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)

from agent_server import create_app
from agent_server.testing import scripted_agent
from gateway.service import create_gateway_app
from tests.support.gateway_service import remote_first_service
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    with serve_app(create_app(scripted_agent())) as url:
        yield url


@pytest.fixture(scope="module")
def gateway_url(agent_url: str) -> Iterator[str]:
    with serve_app(create_gateway_app(remote_first_service(agent_url, name="scripted"))) as url:
        yield url


@pytest.fixture(params=["server", "gateway"])
def base_url(request: pytest.FixtureRequest, agent_url: str, gateway_url: str) -> str:
    return agent_url if request.param == "server" else gateway_url


@pytest.fixture(params=["1.0", "0.3"])
async def client(request: pytest.FixtureRequest, base_url: str) -> AsyncIterator[Client]:
    """A streaming client that speaks the one version its card is left with."""
    async with httpx.AsyncClient(timeout=30) as http:
        card: AgentCard = await A2ACardResolver(http, base_url).get_agent_card()
        keep = [
            each
            for each in card.supported_interfaces
            if each.protocol_binding == "JSONRPC" and each.protocol_version == request.param
        ]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(keep)
        yield ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)


def message(text: str, task: Task | None = None) -> SendMessageRequest:
    ids = {"task_id": task.id, "context_id": task.context_id} if task is not None else {}
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=f"m-{text}", parts=[Part(text=text)], **ids)
    )


async def asked(client: Client) -> Task:
    events = [event async for event in client.send_message(message("ask which plan?"))]
    task = events[0].task
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    return task


def state_of(event: StreamResponse) -> int:
    return event.task.status.state if event.HasField("task") else event.status_update.status.state


async def test_a_subscription_to_an_input_required_task_follows_its_next_run_to_the_end(client: Client) -> None:
    task = await asked(client)
    subscription = client.subscribe(SubscribeToTaskRequest(id=task.id))
    opening = await anext(subscription)
    assert opening.task.id == task.id and opening.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    async with anyio.create_task_group() as replies:
        replies.start_soon(lambda: _drain(client.send_message(message("the big one", task))))
        with anyio.fail_after(20):
            rest = [event async for event in subscription]
    assert rest, "the stream stayed open for the reply's run"
    assert state_of(rest[-1]) == TaskState.TASK_STATE_COMPLETED
    assert any(
        "got" in part.text
        for event in rest
        if event.HasField("artifact_update")
        for part in event.artifact_update.artifact.parts
    )


async def test_a_subscription_to_an_input_required_task_ends_with_its_cancel(client: Client) -> None:
    task = await asked(client)
    subscription = client.subscribe(SubscribeToTaskRequest(id=task.id))
    await anext(subscription)
    canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    with anyio.fail_after(20):
        rest = [event async for event in subscription]
    assert rest and state_of(rest[-1]) == TaskState.TASK_STATE_CANCELED


async def _drain(stream: AsyncIterator[StreamResponse]) -> None:
    async for _ in stream:
        pass
