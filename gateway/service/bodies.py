"""The request bodies of the gateway API; unknown fields are refused, so typos do not pass silently."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..config import ToolConfig


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RegisterAgentBody(_Body):
    """``POST /agents``. ``handoff_from``: local agents that may transfer to it (default: the starting agent)."""

    url: str
    name: str | None = Field(None, min_length=1, max_length=128)
    description: str | None = None
    handoff_from: list[str] | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and (value != value.strip() or "/" in value):
            raise ValueError(f"agent name {value!r} may not contain '/' or start or end with spaces")
        return value


class DefineToolBody(ToolConfig):
    """``POST /tools``: a ``[[tools]]`` entry, plus the local agents whose model may call it."""

    attach_to: list[str] = Field(default_factory=list)


class MessageBody(_Body):
    """``POST /sessions/{id}/messages``. ``stream`` false: wait and answer one JSON summary instead of NDJSON."""

    message: str = Field(min_length=1)
    context_variables: dict[str, Any] | None = None
    stream: bool = True


class ToolCallBody(_Body):
    """``POST /tools/{name}/call``. A string is a text message; an object a data part (MCP tools' arguments)."""

    input: Any
    stream: bool = False

    @field_validator("input")
    @classmethod
    def _input(cls, value: Any) -> str | dict[str, Any]:
        """One reason instead of pydantic's one per member of the union."""
        if isinstance(value, str | dict):
            return value
        raise ValueError(f"must be a string (the message text) or a JSON object (a data part), got {value!r}")
