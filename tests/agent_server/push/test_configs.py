"""Push configs in the task stores and through the TaskManager: kept across a restart (SQLite), shared by
replicas (Redis), the owner's only, gone with their task; and delivered after the restart or by the other replica."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from agent_server import MemoryTaskStore, Principal, SQLiteTaskStore, TaskManager, TaskStore
from agent_server.push.settings import PushSettings, RetryPolicy
from agent_server.stores.redis import RedisTaskStore
from agent_server.testing import scripted_agent
from protocol import ErrorCode, Message, ProtocolError, TaskSendParams, TaskState
from protocol.a2a.push import TaskPushNotificationConfig
from tests.support.waiting import until
from tests.support.webhooks import Webhooks, serve_webhooks

pytestmark = pytest.mark.anyio

PUSH = PushSettings(allowed_hosts=("127.0.0.1",), retry=RetryPolicy(first_backoff_s=0.01))
ALICE, BOB = Principal("alice", "chat"), Principal("bob", "chat")


@pytest.fixture(scope="module")
def webhooks() -> Iterator[Webhooks]:
    with serve_webhooks() as hooks:
        yield hooks


@asynccontextmanager
async def managed(store: TaskStore) -> AsyncIterator[TaskManager]:
    manager = TaskManager(scripted_agent(), store, push=PUSH)
    async with manager.running():
        yield manager


async def asking(manager: TaskManager) -> str:
    """A task waiting for input (not finished, so a reply continues it); its id."""
    task = await manager.send(TaskSendParams(message=Message.user("ask which?")), ALICE)
    assert task.status.state is TaskState.INPUT_REQUIRED
    return task.id


async def reply(manager: TaskManager, task_id: str) -> None:
    task = await manager.send(TaskSendParams(id=task_id, message=Message.user("that one")), ALICE)
    assert task.status.state is TaskState.COMPLETED


def states(webhooks: Webhooks, name: str) -> list[str]:
    return [d.body["statusUpdate"]["status"]["state"] for d in webhooks.received(name) if "statusUpdate" in d.body]


async def test_configs_survive_a_restart_on_sqlite_and_the_next_turn_is_delivered(
    tmp_path: Path, webhooks: Webhooks
) -> None:
    path = tmp_path / "tasks.db"
    async with managed(SQLiteTaskStore(path)) as manager:
        task_id = await asking(manager)
        configs = await manager.push_configs(task_id, ALICE)
        await configs.create(TaskPushNotificationConfig(id="kept", url=webhooks.hook("restart"), token="t"))
        await manager.store.aclose()
    async with managed(SQLiteTaskStore(path)) as manager:
        listed = await (await manager.push_configs(task_id, ALICE)).list()
        assert [(c.id, c.task_id, c.token) for c in listed] == [("kept", task_id, "t")]
        await reply(manager, task_id)
        await until(lambda: "TASK_STATE_COMPLETED" in states(webhooks, "restart"), "the reply's end at the webhook")
        await manager.store.aclose()
    assert states(webhooks, "restart") == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]


async def test_a_config_made_through_one_replica_is_seen_and_delivered_by_the_other(
    redis_url: str, webhooks: Webhooks
) -> None:
    first, second = RedisTaskStore(redis_url), RedisTaskStore(redis_url)
    try:
        async with managed(first) as one, managed(second) as other:
            task_id = await asking(one)
            await (await one.push_configs(task_id, ALICE)).create(
                TaskPushNotificationConfig(id="shared", url=webhooks.hook("replicas"))
            )
            assert [c.id for c in await (await other.push_configs(task_id, ALICE)).list()] == ["shared"]
            await reply(other, task_id)
            await until(lambda: "TASK_STATE_COMPLETED" in states(webhooks, "replicas"), "the end at the webhook")
    finally:
        await first.aclose()
        await second.aclose()


async def test_only_the_owner_sees_or_changes_a_tasks_configs_and_they_go_with_the_task(webhooks: Webhooks) -> None:
    async with managed(MemoryTaskStore()) as manager:
        task_id = await asking(manager)
        with pytest.raises(ProtocolError) as refused:
            await manager.push_configs(task_id, BOB)
        assert refused.value.code == ErrorCode.TASK_NOT_FOUND
        configs = await manager.push_configs(task_id, ALICE)
        made = await configs.create(TaskPushNotificationConfig(url=webhooks.hook("owned")))
        assert made.id, "the server names a config given without an id"
        assert [c.id for c in await (await manager.push_configs(task_id, Principal("root"))).list()] == [made.id]
        await manager.store.delete_task(task_id)
        assert await manager.store.push_configs(task_id) == {}


async def test_a_task_takes_a_bounded_number_of_configs(webhooks: Webhooks) -> None:
    async with managed(MemoryTaskStore()) as manager:
        configs = await manager.push_configs(await asking(manager), ALICE)
        for index in range(PUSH.max_configs_per_task):
            await configs.create(TaskPushNotificationConfig(id=f"c{index}", url=webhooks.hook("many")))
        await configs.create(TaskPushNotificationConfig(id="c0", url=webhooks.hook("replaced")))  # same id: replaced
        with pytest.raises(ProtocolError, match="delete one first"):
            await configs.create(TaskPushNotificationConfig(id="one-more", url=webhooks.hook("many")))


async def test_a_manager_without_push_says_so() -> None:
    manager = TaskManager(scripted_agent(), MemoryTaskStore())
    async with manager.running():
        task_id = await asking(manager)
        with pytest.raises(ProtocolError) as refused:
            await manager.push_configs(task_id, ALICE)
    assert refused.value.code == ErrorCode.PUSH_NOTIFICATION_NOT_SUPPORTED and not manager.pushes
