"""Delivery of task updates to webhooks: in order per task, retried with backoff, through a bounded queue.

A run of a task that has webhooks hands each event it publishes to the sender (``watch``
sets the run's ``push`` hook; a run without webhooks pays nothing). The event is encoded
at once, as the v1.0 ``StreamResponse`` the spec makes a webhook's payload (a
``statusUpdate`` or an ``artifactUpdate``, the ones a stream of the task carries after its
opening Task), and queued with the webhooks of that moment: a config deleted afterwards
gets nothing more. Per task one drainer at a time, in the sender's task group, POSTs the
queue in order to each webhook, with ``X-A2A-Notification-Token: <token>`` and
``Authorization: <scheme> <credentials>``; a failed try (no answer, a 5xx, 408 or 429) is
retried after a backoff that doubles (``RetryPolicy``); redirects are not followed.
The host rule (hosts.py) is asked again before each try. The sender's queue holds at most
``max_pending`` notifications (PushSettings says what is dropped when it is full); every
outcome is counted in ``switchboard_push_notifications_total``. Leaving ``running`` gives
what is queued ``close_timeout_s`` to go, then drops the rest.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import orjson
from anyio.abc import TaskGroup

from agent_server.push.hosts import WebhookHosts
from agent_server.push.settings import PushSettings
from agent_server.tasks.wakeup import Wakeup
from agent_server.telemetry import metrics
from protocol import ProtocolError, StreamEvent, Task
from protocol.a2a import StreamEncoder
from protocol.a2a.push import NOTIFICATION_TOKEN_HEADER, TaskPushNotificationConfig

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger("agent_server")

PAYLOAD_MEDIA_TYPE = "application/a2a+json"
Hook = Callable[[StreamEvent], None]


@dataclass(frozen=True)
class _Notification:
    body: bytes
    webhooks: tuple[TaskPushNotificationConfig, ...]


@dataclass
class _Watch:
    """One run's push: its encoder (which artifacts it has sent) and the task's webhooks now."""

    encoder: StreamEncoder
    webhooks: tuple[TaskPushNotificationConfig, ...]


class PushSender:
    """Delivers the events of the runs it watches; see the module docstring."""

    def __init__(self, settings: PushSettings, hosts: WebhookHosts) -> None:
        self.settings = settings
        self.hosts = hosts
        self._watches: dict[str, _Watch] = {}
        self._queues: dict[str, deque[_Notification]] = {}
        self._pending = 0
        self._task_group: TaskGroup | None = None
        self._client: httpx.AsyncClient | None = None
        self._limiter = anyio.CapacityLimiter(settings.max_concurrent)
        self._drained = Wakeup()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Own the HTTP client and the task group the drainers live in; httpx is imported here, by a server that
        delivers, not by every program that imports a task manager."""
        import httpx

        client = httpx.AsyncClient(timeout=self.settings.retry.timeout_s, follow_redirects=False, trust_env=False)
        async with client, anyio.create_task_group() as task_group:
            self._client, self._task_group = client, task_group
            try:
                yield
            finally:
                with anyio.move_on_after(self.settings.close_timeout_s, shield=True):
                    while self._queues:
                        await self._drained.wait()
                self._task_group = None
                task_group.cancel_scope.cancel()
                if self._pending:
                    logger.warning("%d push notifications were not delivered: the server stopped", self._pending)
                    metrics.record_push("dropped", self._pending)
                self._queues.clear()
                self._pending = 0

    def watch(self, task: Task, webhooks: Sequence[TaskPushNotificationConfig]) -> Hook | None:
        """The hook a run of ``task`` hands its events to from now on (None: the task has no webhooks)."""
        if not webhooks:
            self._watches.pop(task.id, None)
            return None
        watch = self._watches.get(task.id)
        if watch is None:
            watch = self._watches[task.id] = _Watch(StreamEncoder(task), tuple(webhooks))
        else:
            watch.webhooks = tuple(webhooks)
        return lambda event: self._submit(task.id, watch, event)

    def _submit(self, task_id: str, watch: _Watch, event: StreamEvent) -> None:
        if event.final and self._watches.get(task_id) is watch:
            del self._watches[task_id]  # the run is over; the next send of the task watches anew
        task_group = self._task_group
        if task_group is None:
            metrics.record_push("dropped", len(watch.webhooks))
            return
        body = orjson.dumps(watch.encoder.encode(event).to_wire())
        queue = self._queues.get(task_id)
        if self._pending >= self.settings.max_pending:
            if not queue:
                logger.warning("push queue full (%d): an update of task %s dropped", self._pending, task_id)
                metrics.record_push("dropped", len(watch.webhooks))
                return
            oldest = queue.popleft()
            self._pending -= 1
            logger.warning("push queue full (%d): an older update of task %s dropped", self._pending, task_id)
            metrics.record_push("dropped", len(oldest.webhooks))
        if queue is None:
            queue = self._queues[task_id] = deque()
            task_group.start_soon(self._drain, task_id, queue, name=f"push {task_id}")
        queue.append(_Notification(body, watch.webhooks))
        self._pending += 1

    async def _drain(self, task_id: str, queue: deque[_Notification]) -> None:
        """The task's queue, in order, until it is empty (a later update starts another drainer)."""
        try:
            async with self._limiter:
                while queue:
                    notification = queue.popleft()
                    self._pending -= 1
                    for webhook in notification.webhooks:
                        await self._deliver(task_id, webhook, notification.body)
        finally:
            if self._queues.get(task_id) is queue:
                del self._queues[task_id]
            self._drained.notify()

    async def _deliver(self, task_id: str, webhook: TaskPushNotificationConfig, body: bytes) -> None:
        """One notification to one webhook, tried up to ``max_attempts`` times; never raises."""
        assert self._client is not None
        headers = {"content-type": PAYLOAD_MEDIA_TYPE}
        if webhook.token:
            headers[NOTIFICATION_TOKEN_HEADER] = webhook.token
        auth = webhook.authentication
        if auth is not None and auth.credentials:
            headers["authorization"] = f"{auth.scheme} {auth.credentials}"
        retry = self.settings.retry
        for attempt in range(1, retry.max_attempts + 1):
            try:
                await self.hosts.check(webhook.url)
            except ProtocolError as exc:
                logger.warning("push config %s of task %s not used: %s", webhook.id, task_id, exc.message)
                metrics.record_push("refused")
                return
            problem, retryable = await self._post(webhook.url, body, headers)
            if problem is None:
                metrics.record_push("delivered")
                return
            if not retryable or attempt == retry.max_attempts:
                logger.warning(
                    "push to %s for task %s failed after %d tries: %s", webhook.url, task_id, attempt, problem
                )
                metrics.record_push("failed")
                return
            metrics.record_push("retried")
            await anyio.sleep(retry.backoff_s(attempt))

    async def _post(self, url: str, body: bytes, headers: dict[str, str]) -> tuple[str | None, bool]:
        """One try: (None, _) when the webhook took it, else what went wrong and whether another try may help."""
        import httpx

        assert self._client is not None
        try:
            response = await self._client.post(url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}", True
        status = response.status_code
        if 200 <= status < 300:
            return None, False
        return f"HTTP {status}", status >= 500 or status in (408, 429)
