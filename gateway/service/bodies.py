"""The request bodies of the gateway API; unknown fields are refused, so typos do not pass silently."""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from agent_server.http.auth import token_problem
from gateway.config.model import ToolConfig


def _checked_token(value: str) -> str:
    problem = token_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


Token = Annotated[str, AfterValidator(_checked_token)]
"""A credential for an agent, as an ``Authorization: Bearer`` header can carry it."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RegisterAgentBody(_Body):
    """``POST /agents``. ``handoff_from``: local agents that may transfer to it (default: the starting agent)."""

    url: str
    name: str | None = Field(None, min_length=1, max_length=128)
    description: str | None = None
    handoff_from: list[str] | None = Field(None, fail_fast=True)  # fail_fast: one bad name is reported, not 400,000
    token: Token | None = Field(None, repr=False)
    """Sent to this agent only (``Authorization: Bearer``); never shown in answers, events or logs."""
    max_cost_usd: float | None = Field(None, ge=0, allow_inf_nan=False)
    """What one task of this agent may cost, as it reports: a turn or a proxied call going past it is cancelled."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and (value != value.strip() or "/" in value):
            raise ValueError(f"agent name {value!r} may not contain '/' or start or end with spaces")
        return value


class DefineToolBody(ToolConfig):
    """``POST /tools``: a ``[[tools]]`` entry, plus the local agents whose model may call it and its ``token``.

    ``attach_to`` left out: the starting agent (when it is local), as ``POST /agents`` gives
    it the transfer to a new agent; ``[]``: no agent (the tool is only called directly).

    ``token_env`` is refused: it would let an API caller send any of the gateway's
    environment variables to an agent of its choice.
    """

    attach_to: list[str] | None = Field(None, fail_fast=True)
    token: Token | None = Field(None, repr=False)

    @field_validator("token_env")
    @classmethod
    def _no_token_env(cls, value: str | None) -> None:
        if value is not None:
            raise ValueError(
                "token_env is read from the gateway's environment, so only the configuration file may use it; "
                "pass token"
            )

    def config(self) -> ToolConfig:
        """The ``[[tools]]`` entry alone."""
        return ToolConfig.model_validate(self.model_dump(exclude={"attach_to", "token"}))


class _Streamed(_Body):
    """A body whose run may be streamed; ``cancel_on_disconnect``: the run ends when that stream's client leaves.

    The default is that the run goes on (it can be read again from ``GET /runs/{id}/events``).
    """

    stream: bool
    cancel_on_disconnect: bool = False

    @model_validator(mode="after")
    def _streamed_cancel(self) -> Self:
        if self.cancel_on_disconnect and not self.stream:
            raise ValueError("cancel_on_disconnect is for a streamed run: send stream: true with it")
        return self


class MessageBody(_Streamed):
    """``POST /sessions/{id}/messages``. ``stream`` false: wait and answer one JSON summary instead of NDJSON."""

    message: str = Field(min_length=1)
    context_variables: dict[str, Any] | None = None
    stream: bool = True


class SessionAgentBody(_Body):
    """``PUT /sessions/{id}/agent``: the agent that takes the session's next turn."""

    agent: str = Field(min_length=1, max_length=128)


class ToolCallBody(_Streamed):
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


class BoardBody(_Body):
    """``PUT /boards/{name}``, ``PUT /sessions/{id}/board``: the whole board, written if still at ``version``."""

    version: int = Field(ge=0)
    entries: dict[str, Any]
