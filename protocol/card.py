"""The agent card served at /.well-known/agent.json."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ._wire import WireModel


class AgentCapabilities(WireModel):
    streaming: bool = True
    push_notifications: bool = False
    state_transition_history: bool = True


class AgentSkill(WireModel):
    id: str
    name: str
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)


class AgentCard(WireModel):
    name: str
    description: str | None = None
    url: str
    version: str = "0.1.0"
    capabilities: AgentCapabilities = Field(default_factory=AgentCapabilities)
    default_input_modes: list[str] = Field(default_factory=lambda: ["text", "data"])
    default_output_modes: list[str] = Field(default_factory=lambda: ["text", "data"])
    skills: list[AgentSkill] = Field(default_factory=list)
    security_schemes: dict[str, dict[str, Any]] | None = None
    security: list[dict[str, list[str]]] | None = None

    def with_bearer_auth(self) -> AgentCard:
        """This card, saying that every call needs ``Authorization: Bearer <token>``."""
        return self.model_copy(
            update={
                "security_schemes": {BEARER_SCHEME: {"type": "http", "scheme": "bearer"}},
                "security": [{BEARER_SCHEME: []}],
            }
        )


BEARER_SCHEME = "bearer"
