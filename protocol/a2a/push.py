"""Push-notification configs of A2A v1.0 and v0.3 in their JSON form, and the translation between them.

A config names the webhook a server POSTs a task's updates to: its ``url``, a ``token``
the server sends back (``X-A2A-Notification-Token``) so the receiver knows the call is
about its task, and ``authentication`` for the ``Authorization`` header. v1.0 keeps it
flat (``TaskPushNotificationConfig``: ``taskId``, ``id``, ``url``, ``token``,
``authentication: {scheme, credentials}``); v0.3 wraps it (``{taskId,
pushNotificationConfig: {id, url, token, authentication: {schemes, credentials}}}``) and
names the task ``id`` in its get/list/delete parameters. The v1.0 form is the one kept.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from protocol._wire import WireModel

MAX_PAGE_SIZE = 100
NOTIFICATION_TOKEN_HEADER = "X-A2A-Notification-Token"
"""The header a webhook call carries a config's ``token`` in (the one a2a-sdk servers and clients use)."""

Name = Annotated[str, Field(min_length=1)]


class AuthenticationInfo(WireModel):
    """The ``Authorization`` header of a webhook call: ``<scheme> <credentials>``."""

    scheme: Name
    credentials: str | None = None


class _Webhook(WireModel):
    """What both versions' configs hold alike; ``id`` is the server's to choose when the client gives none."""

    id: str | None = None
    url: Name
    token: str | None = None


class TaskPushNotificationConfig(_Webhook):
    """A webhook for one task (v1.0)."""

    tenant: str | None = None
    task_id: str | None = None
    authentication: AuthenticationInfo | None = None


class GetTaskPushNotificationConfigRequest(WireModel):
    tenant: str | None = None
    task_id: Name
    id: Name


class DeleteTaskPushNotificationConfigRequest(GetTaskPushNotificationConfigRequest):
    pass


class ListTaskPushNotificationConfigsRequest(WireModel):
    tenant: str | None = None
    task_id: Name
    page_size: Annotated[int, Field(ge=0, le=MAX_PAGE_SIZE, strict=True)] | None = None
    page_token: str | None = None


class LegacyAuthentication(WireModel):
    """v0.3: the schemes the webhook accepts; the first is the one used."""

    schemes: list[str] = Field(default_factory=list)
    credentials: str | None = None


class LegacyPushConfig(_Webhook):
    """v0.3's webhook, its task beside it (``LegacyTaskPushConfig``) or implied (a send's)."""

    authentication: LegacyAuthentication | None = None


class LegacyTaskPushConfig(WireModel):
    """v0.3's ``tasks/pushNotificationConfig/set`` parameters and the result of every one of its methods."""

    task_id: Name
    push_notification_config: LegacyPushConfig


class LegacyConfigParams(WireModel):
    """v0.3's get/list/delete parameters: the task is ``id``; get may leave the config out (the task's first)."""

    id: Name
    push_notification_config_id: str | None = None
    metadata: dict[str, Any] | None = None


def config_from_legacy(config: LegacyPushConfig, task_id: str | None) -> TaskPushNotificationConfig:
    """A v0.3 config as v1.0; its first scheme becomes the one scheme (none: no authentication)."""
    auth = config.authentication
    scheme = auth.schemes[0] if auth is not None and auth.schemes else None
    return TaskPushNotificationConfig(
        id=config.id,
        task_id=task_id,
        url=config.url,
        token=config.token,
        authentication=AuthenticationInfo(scheme=scheme, credentials=auth.credentials)
        if scheme and auth is not None
        else None,
    )


def config_to_legacy(config: TaskPushNotificationConfig) -> LegacyTaskPushConfig:
    auth = config.authentication
    return LegacyTaskPushConfig(
        task_id=config.task_id or "",
        push_notification_config=LegacyPushConfig(
            id=config.id,
            url=config.url,
            token=config.token,
            authentication=LegacyAuthentication(schemes=[auth.scheme], credentials=auth.credentials)
            if auth is not None
            else None,
        ),
    )
