"""The four config operations on one task's webhooks, the same for every binding.

``TaskManager.push_configs`` hands a ``TaskPushConfigs`` out only after checking that the
caller may see the task (its owner, or an admin), so nothing here decides who may act; a
binding parses its own request shapes and calls ``create``, ``get``, ``list`` or ``delete``.
A config is kept in the task store as its v1.0 JSON, so it outlives a restart (SQLite) and
every replica sharing the store (Redis) sees it; it is forgotten with its task.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from agent_server.push.hosts import WebhookHosts
from agent_server.push.settings import PushSettings
from agent_server.stores.base import TaskStore
from protocol import ErrorCode, ProtocolError
from protocol.a2a.push import TaskPushNotificationConfig

Changed = Callable[[str, list[TaskPushNotificationConfig]], None]
"""Told the task's configs after each change, so a run of this process delivers to them at once."""


@dataclass(frozen=True)
class TaskPushConfigs:
    """The webhook configs of task ``task_id``, whose caller has been checked."""

    task_id: str
    store: TaskStore
    hosts: WebhookHosts
    settings: PushSettings
    changed: Changed

    async def create(self, config: TaskPushNotificationConfig) -> TaskPushNotificationConfig:
        """Keep ``config`` (replacing one of the same id); -32602 for a webhook host the server may not call."""
        if config.task_id and config.task_id != self.task_id:
            raise ProtocolError.invalid_param(
                "taskId", f"{config.task_id!r} is not the task {self.task_id!r} this config is created for"
            )
        await self.hosts.check(config.url)
        config_id = config.id or uuid.uuid4().hex
        stored = config.model_copy(update={"id": config_id, "task_id": self.task_id, "tenant": None})
        configs = await self.list()
        if config_id not in {other.id for other in configs} and len(configs) >= self.settings.max_configs_per_task:
            raise ProtocolError.invalid_param(
                "id",
                f"task {self.task_id!r} has {len(configs)} push configs, the most it may have",
                "delete one first",
            )
        await self.store.save_push_config(self.task_id, config_id, stored.to_json())
        self.changed(self.task_id, [*(other for other in configs if other.id != config_id), stored])
        return stored

    async def get(self, config_id: str) -> TaskPushNotificationConfig:
        """The config ``config_id``; -32001 when the task has none of that id (the spec's TaskNotFoundError)."""
        for config in await self.list():
            if config.id == config_id:
                return config
        raise ProtocolError(
            ErrorCode.TASK_NOT_FOUND,
            f"task {self.task_id!r} has no push config {config_id!r} ; list the task's configs",
        )

    async def list(self) -> list[TaskPushNotificationConfig]:
        """Every config of the task, by id."""
        found = await self.store.push_configs(self.task_id)
        return [TaskPushNotificationConfig.model_validate_json(found[config_id]) for config_id in sorted(found)]

    async def delete(self, config_id: str) -> None:
        """Forget ``config_id``: no notification goes to it afterwards; deleting it again is fine."""
        await self.store.delete_push_config(self.task_id, config_id)
        self.changed(self.task_id, await self.list())
