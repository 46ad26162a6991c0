"""The sender's limits: a full queue drops the oldest update of a task, a webhook that never answers is tried a
bounded number of times, one that refuses (a 4xx) is not tried again; each outcome counted in the metrics."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agent_server.http.loopback import free_port
from agent_server.push.hosts import WebhookHosts
from agent_server.push.sender import PushSender
from agent_server.push.settings import PushSettings, RetryPolicy
from agent_server.telemetry.metrics import REGISTRY
from protocol import StatusEvent, Task, TaskState, TaskStatus
from protocol.a2a.push import TaskPushNotificationConfig
from tests.support.waiting import until
from tests.support.webhooks import Webhooks, serve_webhooks

pytestmark = pytest.mark.anyio

LOOPBACK = ("127.0.0.1",)


@pytest.fixture(scope="module")
def webhooks() -> Iterator[Webhooks]:
    with serve_webhooks() as hooks:
        yield hooks


def counted(outcome: str) -> float:
    return REGISTRY.get_sample_value("switchboard_push_notifications_total", {"outcome": outcome}) or 0.0


def sender(max_pending: int = 100, **retry: Any) -> PushSender:
    settings = PushSettings(allowed_hosts=LOOPBACK, max_pending=max_pending, retry=RetryPolicy(**retry))
    return PushSender(settings, WebhookHosts(LOOPBACK))


def status(seq: int, state: TaskState, *, final: bool = False) -> StatusEvent:
    return StatusEvent(seq=seq, id="t1", status=TaskStatus(state=state), final=final)


TASK = Task(id="t1", session_id="s1", status=TaskStatus(state=TaskState.WORKING))


async def test_a_full_queue_drops_the_oldest_update_of_the_task_and_counts_it(webhooks: Webhooks) -> None:
    dropped = counted("dropped")
    push = sender(max_pending=1)
    async with push.running():
        hook = push.watch(TASK, [TaskPushNotificationConfig(id="c", task_id="t1", url=webhooks.hook("full"))])
        assert hook is not None
        hook(status(0, TaskState.WORKING))  # three updates before the drainer runs: room for one
        hook(status(1, TaskState.WORKING))
        hook(status(2, TaskState.COMPLETED, final=True))
        await until(lambda: len(webhooks.received("full")) == 1, "the one update left")
    states = [d.body["statusUpdate"]["status"]["state"] for d in webhooks.received("full")]
    assert states == ["TASK_STATE_COMPLETED"], "the newest state is the one kept"
    assert counted("dropped") == dropped + 2


async def test_an_unreachable_webhook_is_tried_max_attempts_times_then_given_up() -> None:
    retried, failed = counted("retried"), counted("failed")
    push = sender(max_attempts=3, first_backoff_s=0.001)
    async with push.running():
        url = f"http://127.0.0.1:{free_port()}/nobody"
        hook = push.watch(TASK, [TaskPushNotificationConfig(id="c", task_id="t1", url=url)])
        assert hook is not None
        hook(status(0, TaskState.COMPLETED, final=True))
        await until(lambda: counted("failed") == failed + 1, "the delivery given up")
    assert counted("retried") == retried + 2


async def test_a_webhook_that_refuses_with_a_4xx_is_not_tried_again(webhooks: Webhooks) -> None:
    retried, failed = counted("retried"), counted("failed")
    push = sender(first_backoff_s=0.001)
    async with push.running():
        config = TaskPushNotificationConfig(id="c", task_id="t1", url=webhooks.url + "/no-such-path")
        hook = push.watch(TASK, [config])
        assert hook is not None
        hook(status(0, TaskState.COMPLETED, final=True))
        await until(lambda: counted("failed") == failed + 1, "the delivery given up")
    assert counted("retried") == retried


async def test_a_task_without_webhooks_is_not_watched() -> None:
    assert sender().watch(TASK, []) is None
