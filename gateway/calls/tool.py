"""An agent exposed as a tool: a value saying what to call and how, checked once when it is made.

``AgentTool`` is that value (URI, mode, deadlines, budget, credential), built from the
Python API (``Gateway.add_agent_tool``) or the configuration (``ToolConfig.agent_tool``).
It holds no gateway: a call gets its peer and the gateway's deadlines handed to it
(gateway/calls/engine.py). ``AgentToolFunction`` is the same tool offered to a local
agent's model, bound to the function that calls it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from agent_server.http.auth import token_problem
from gateway import defaults
from gateway.calls.budget import Budget
from gateway.calls.result import AgentToolResult
from gateway.errors import AgentToolError
from gateway.models.base import ToolSpec
from gateway.tools import TOOL_NAME_PATTERN, TOOL_NAME_RULE
from gateway.uri import AgentTarget, parse_agent_uri
from protocol import DataPart, Message, TextPart

NextInput = Callable[[str, AgentToolResult], str | Message | Awaitable[str | Message | None] | None]
ToolInput = str | Message | Mapping[str, Any]
CallTool = Callable[[str, ToolInput], Awaitable[AgentToolResult]]
"""Calls the agent tool of that name with an input (``Gateway.call_tool``)."""


class AgentToolOptions(TypedDict, total=False):
    """The options of ``Gateway.add_agent_tool`` after the name and URI (see ``AgentTool.create``)."""

    mode: str | Mapping[str, Any] | Mode
    timeout_ms: int
    budget: Budget | Mapping[str, Any] | None
    streaming: Mapping[str, Any] | None
    description: str | None
    token: str | None


_MODES = "'sync', 'streaming' or {'conversational': {'max_turns': N, 'next_input': callable}}"
_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "The message to send to the agent."}},
    "required": ["input"],
}


@dataclass(frozen=True)
class Mode:
    """How a call talks to the agent. ``next_input`` decides a conversational turn's input (None: stop)."""

    kind: Literal["sync", "streaming", "conversational"]
    max_turns: int = 1
    next_input: NextInput | None = None

    @classmethod
    def parse(cls, value: str | Mapping[str, Any] | Mode) -> Mode:
        if isinstance(value, Mode):
            return value
        if value in ("sync", "streaming"):
            return cls(kind=value)  # type: ignore[arg-type]
        if value == "conversational":
            return cls(kind="conversational", max_turns=defaults.CONVERSATIONAL_MAX_TURNS)
        if isinstance(value, Mapping) and set(value) == {"conversational"}:
            options = dict(value["conversational"] or {})
            unknown = set(options) - {"max_turns", "next_input"}
            if unknown:
                raise ValueError(f"unknown conversational option(s) {sorted(unknown)}; expected max_turns, next_input")
            max_turns = options.get("max_turns", defaults.CONVERSATIONAL_MAX_TURNS)
            if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
                raise ValueError(f"conversational max_turns must be an integer >= 1, got {max_turns!r}")
            next_input = options.get("next_input")
            if next_input is not None and not callable(next_input):
                raise ValueError(f"conversational next_input must be callable, got {type(next_input).__name__}")
            return cls(kind="conversational", max_turns=max_turns, next_input=next_input)
        raise ValueError(f"unknown agent-tool mode {value!r}; expected {_MODES}")


@dataclass(frozen=True)
class AgentTool:
    """A peer agent as a tool: name, agent URI (and its parsed ``target``), mode, deadlines, budget, credential.

    ``timeout_ms`` bounds a sync request or a conversational turn, ``idle_timeout_s`` a
    stream's silence; ``token`` is sent (``Authorization: Bearer``) to this agent only
    and never shown. Every field is checked here: a bad URI or option fails at once.
    """

    name: str
    agent: str
    mode: Mode = field(default_factory=lambda: Mode("sync"))
    timeout_ms: int = defaults.TOOL_TIMEOUT_MS
    budget: Budget = field(default_factory=Budget)
    idle_timeout_s: float = defaults.IDLE_TIMEOUT_S
    description: str = ""
    token: str | None = field(default=None, repr=False)
    target: AgentTarget = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not TOOL_NAME_PATTERN.match(self.name):
            raise ValueError(f"agent tool name {self.name!r} is not valid ({TOOL_NAME_RULE})")
        timeout = self.timeout_ms
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError(f"timeout_ms must be a positive number of milliseconds, got {timeout!r}")
        idle = self.idle_timeout_s
        if isinstance(idle, bool) or not isinstance(idle, int | float) or idle <= 0:
            raise ValueError(f"streaming idle_timeout_secs must be a positive number, got {idle!r}")
        if self.token is not None and (problem := token_problem(self.token)) is not None:
            raise ValueError(problem)
        object.__setattr__(self, "target", parse_agent_uri(self.agent))
        if not self.description:
            default = f"Ask the agent at {self.agent} ({self.mode.kind}); returns its answer."
            object.__setattr__(self, "description", default)

    @classmethod
    def create(
        cls,
        name: str,
        agent: str,
        *,
        mode: str | Mapping[str, Any] | Mode = "sync",
        timeout_ms: int = defaults.TOOL_TIMEOUT_MS,
        budget: Budget | Mapping[str, Any] | None = None,
        streaming: Mapping[str, Any] | None = None,
        description: str | None = None,
        token: str | None = None,
    ) -> AgentTool:
        """The tool from the loose forms of the Python API (``budget={"max_cost_usd": ...}``, ``streaming={...}``)."""
        return cls(
            name=name,
            agent=agent,
            mode=Mode.parse(mode),
            timeout_ms=timeout_ms,
            budget=Budget.parse(budget),
            idle_timeout_s=_idle_timeout(streaming),
            description=description or "",
            token=token,
        )

    @property
    def spec(self) -> ToolSpec:
        """What a model sees of the tool."""
        return ToolSpec(name=self.name, description=self.description, parameters=_PARAMETERS)


class AgentToolFunction:
    """An agent tool offered to a model: its spec, and ``invoke`` calling it through ``call``."""

    def __init__(self, tool: AgentTool, call: CallTool) -> None:
        self.tool = tool
        self.name = tool.name
        self.description = tool.description
        self.parameters = tool.spec.parameters
        self._call = call

    @property
    def spec(self) -> ToolSpec:
        return self.tool.spec

    async def invoke(self, arguments: dict[str, Any], context_variables: dict[str, Any] | None = None) -> str:
        """The agent's text, or a description of the failure and what came before it."""
        text = arguments.get("input")
        if not isinstance(text, str):
            return f"error: the tool {self.name} needs an 'input' string argument"
        try:
            result = await self._call(self.name, text)
        except AgentToolError as exc:
            partial = exc.partial.text if exc.partial is not None else ""
            note = f"[agent tool {self.name} failed ({exc.reason}): {exc.message}]"
            return f"{partial}\n{note}" if partial else note
        return result.text

    def __repr__(self) -> str:
        return f"AgentToolFunction(name={self.name!r}, agent={self.tool.agent!r}, mode={self.tool.mode.kind!r})"


def as_message(value: ToolInput) -> Message:
    """A string is a user text message; a dict is a data part (MCP tools take it as their arguments)."""
    if isinstance(value, Message):
        return value
    if isinstance(value, str):
        return Message(role="user", parts=[TextPart(text=value)])
    if isinstance(value, Mapping):
        return Message(role="user", parts=[DataPart(data=dict(value))])
    raise TypeError(f"an agent tool's input is a str, a protocol.Message or a dict, got {type(value).__name__}")


def _idle_timeout(streaming: Mapping[str, Any] | None) -> float:
    options = dict(streaming or {})
    unknown = set(options) - {"idle_timeout_secs"}
    if unknown:
        raise ValueError(f"unknown streaming option(s) {sorted(unknown)}; expected idle_timeout_secs")
    value = options.get("idle_timeout_secs", defaults.IDLE_TIMEOUT_S)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"streaming idle_timeout_secs must be a positive number, got {value!r}")
    return float(value)
