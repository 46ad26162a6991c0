"""The sections of ``[gateway]`` that say what the gateway's own A2A face offers: push notifications and the
extended card. Each is off until the operator writes it; ``gateway.grpc_port`` is in ServerConfig (model.py).
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from agent_server.extended_card import ExtendedCard
from agent_server.push.hosts import WebhookHosts
from agent_server.push.settings import PushSettings, RetryPolicy
from gateway.config.sections import Strict, as_settings

_PUSH_DEFAULTS = PushSettings()
_RETRY_DEFAULTS = RetryPolicy()


class RetryConfig(Strict):
    """``[gateway.push.retry]``: how one notification is tried again (agent_server/push/settings.py RetryPolicy)."""

    max_attempts: int = Field(_RETRY_DEFAULTS.max_attempts, ge=1)
    first_backoff_secs: float = Field(_RETRY_DEFAULTS.first_backoff_s, ge=0)
    max_backoff_secs: float = Field(_RETRY_DEFAULTS.max_backoff_s, ge=0)
    timeout_secs: float = Field(_RETRY_DEFAULTS.timeout_s, gt=0)


class PushConfig(Strict):
    """``[gateway.push]``: push notifications of the gateway's own A2A face, off unless ``enabled``.

    A webhook URL comes from a caller, so the gateway posts only to public hosts and to the
    ``allowed_hosts`` the operator lists (names, ``*.SUFFIX``, addresses, networks:
    agent_server/push/hosts.py). The other keys mirror ``PushSettings``.
    """

    enabled: bool = False
    allowed_hosts: list[str] = Field(default_factory=list)
    max_configs_per_task: int = Field(_PUSH_DEFAULTS.max_configs_per_task, ge=1)
    max_pending: int = Field(_PUSH_DEFAULTS.max_pending, ge=1)
    max_concurrent: int = Field(_PUSH_DEFAULTS.max_concurrent, ge=1)
    close_timeout_secs: float = Field(_PUSH_DEFAULTS.close_timeout_s, ge=0)
    retry: RetryConfig = Field(default_factory=RetryConfig)

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        WebhookHosts(value)  # raises ValueError naming the entry it cannot read
        return value

    @model_validator(mode="after")
    def _said_enabled(self) -> PushConfig:
        """Settings without ``enabled`` at all are a push the operator meant to turn on and did not."""
        if "enabled" not in self.model_fields_set and self.model_fields_set:
            raise ValueError(
                "push notifications are off unless enabled: add enabled = true "
                "(or enabled = false to keep these settings while push is off)"
            )
        return self

    def settings(self) -> PushSettings | None:
        """The PushSettings the gateway's face runs with; None when push is off."""
        if not self.enabled:
            return None
        return PushSettings(
            allowed_hosts=tuple(self.allowed_hosts),
            max_configs_per_task=self.max_configs_per_task,
            max_pending=self.max_pending,
            max_concurrent=self.max_concurrent,
            close_timeout_s=self.close_timeout_secs,
            retry=RetryPolicy(**as_settings(self.retry)),
        )


class SkillConfig(Strict):
    """One ``[[gateway.extended_card.skills]]`` entry: a skill the extended card lists after the public ones."""

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)


class ExtendedCardConfig(Strict):
    """``[gateway.extended_card]`` (and the file of ``switchboard serve --extended-card``): what a caller with a
    token learns beyond the public card; ``description`` replaces the public one, ``skills`` come after its own."""

    description: str | None = Field(None, min_length=1)
    skills: list[SkillConfig] = Field(default_factory=list)

    @model_validator(mode="after")
    def _adds_something(self) -> ExtendedCardConfig:
        if self.description is None and not self.skills:
            raise ValueError("an extended card adds a description, skills or both; give one, or remove the table")
        ids = [skill.id for skill in self.skills]
        repeated = sorted({skill_id for skill_id in ids if ids.count(skill_id) > 1})
        if repeated:
            raise ValueError(f"skill ids must differ; repeated: {', '.join(repeated)}")
        return self

    def card(self) -> ExtendedCard:
        return ExtendedCard.of(description=self.description, skills=[skill.model_dump() for skill in self.skills])
