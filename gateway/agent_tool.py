"""An agent exposed as a tool: called directly (``gateway.call_tool``) or by a local agent's model.

The tool holds the configuration (URI, mode, deadlines, budget); each call is an
``AgentCall`` (gateway/agent_call.py) that records every step in the run's event log.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from protocol import DataPart, Message, TextPart

from .agent_call import AgentCall
from .agent_result import AgentToolResult
from .budget import Budget
from .errors import AgentToolError
from .models.base import ToolSpec
from .recorder import RunRecorder, current_recorder
from .uri import AgentTarget, parse_agent_uri

if TYPE_CHECKING:
    from .gateway import Gateway

NextInput = Callable[[str, AgentToolResult], str | Message | None | Awaitable[str | Message | None]]
ToolInput = str | Message | Mapping[str, Any]

class AgentToolOptions(TypedDict, total=False):
    """The options of ``add_agent_tool`` after the name and URI (see ``AgentTool``)."""

    mode: str | Mapping[str, Any] | Mode
    timeout_ms: int
    budget: Budget | Mapping[str, Any] | None
    streaming: Mapping[str, Any] | None
    description: str | None
    token: str | None


DEFAULT_TIMEOUT_MS = 30_000
"""``timeout_ms``: the deadline of a sync request or a conversational turn (the one definition; config imports it)."""
DEFAULT_IDLE_TIMEOUT_S = 30.0
"""``streaming.idle_timeout_secs``: the longest wait for a stream's next line."""
DEFAULT_MAX_TURNS = 5

TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
"""Every tool name the gateway accepts (agent tools, function tools, configured tools). It ends in ``\\Z``:
``$`` also matches before a final newline, and a name ending in one breaks the Location header."""
TOOL_NAME_RULE = "1-64 letters, digits, '_' or '-'"
"""``TOOL_NAME_PATTERN`` in words, for error messages."""
_MODES = "'sync', 'streaming' or {'conversational': {'max_turns': N, 'next_input': callable}}"


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
            return cls(kind="conversational", max_turns=DEFAULT_MAX_TURNS)
        if isinstance(value, Mapping) and set(value) == {"conversational"}:
            options = dict(value["conversational"] or {})
            unknown = set(options) - {"max_turns", "next_input"}
            if unknown:
                raise ValueError(f"unknown conversational option(s) {sorted(unknown)}; expected max_turns, next_input")
            max_turns = options.get("max_turns", DEFAULT_MAX_TURNS)
            if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
                raise ValueError(f"conversational max_turns must be an integer >= 1, got {max_turns!r}")
            next_input = options.get("next_input")
            if next_input is not None and not callable(next_input):
                raise ValueError(f"conversational next_input must be callable, got {type(next_input).__name__}")
            return cls(kind="conversational", max_turns=max_turns, next_input=next_input)
        raise ValueError(f"unknown agent-tool mode {value!r}; expected {_MODES}")


class AgentTool:
    """A peer agent as a tool. Also a function tool for models: ``name``, ``spec``, ``invoke``."""

    def __init__(
        self,
        gateway: Gateway,
        name: str,
        agent: str,
        *,
        mode: str | Mapping[str, Any] | Mode = "sync",
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        budget: Budget | Mapping[str, Any] | None = None,
        streaming: Mapping[str, Any] | None = None,
        description: str | None = None,
        token: str | None = None,
    ) -> None:
        """``token``: a credential sent (``Authorization: Bearer``) to this agent only, never shown."""
        if not isinstance(name, str) or not TOOL_NAME_PATTERN.match(name):
            raise ValueError(f"agent tool name {name!r} is not valid ({TOOL_NAME_RULE})")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float) or timeout_ms <= 0:
            raise ValueError(f"timeout_ms must be a positive number of milliseconds, got {timeout_ms!r}")
        self.gateway = gateway
        self.name = name
        self.agent = agent
        self.target: AgentTarget = parse_agent_uri(agent)
        """The parsed URI: checked here, and what the gateway makes the peer from (``gateway.peer(tool.target)``)."""
        self.mode = Mode.parse(mode)
        self.timeout_ms = timeout_ms
        self.budget = Budget.parse(budget)
        self.idle_timeout_s = _idle_timeout(streaming)
        self.description = description or f"Ask the agent at {agent} ({self.mode.kind}); returns its answer."
        self.token = token
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {"input": {"type": "string", "description": "The message to send to the agent."}},
            "required": ["input"],
        }

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    def __repr__(self) -> str:
        return f"AgentTool(name={self.name!r}, agent={self.agent!r}, mode={self.mode.kind!r})"

    async def call(
        self, input: ToolInput, *, run_id: str | None = None, session_id: str | None = None
    ) -> AgentToolResult:
        """Run one call; raises an AgentToolError (with ``.partial``) when it fails.

        Events go to ``run_id`` when given, else to the current run (a swarm run in
        progress), else to a new run of their own that is closed when the call ends.
        """
        recorder, owned = self._recorder(run_id)
        call = AgentCall(self, recorder, as_message(input), session_id=session_id)
        try:
            return await call.run()
        finally:
            if owned:
                await call.close_run()

    async def invoke(self, arguments: dict[str, Any], context_variables: dict[str, Any] | None = None) -> str:
        """The model-facing call: the agent's text, or a description of the failure and what came before it."""
        text = arguments.get("input")
        if not isinstance(text, str):
            return f"error: the tool {self.name} needs an 'input' string argument"
        try:
            result = await self.call(text)
        except AgentToolError as exc:
            partial = exc.partial.text if exc.partial is not None else ""
            note = f"[agent tool {self.name} failed ({exc.reason}): {exc.message}]"
            return f"{partial}\n{note}" if partial else note
        return result.text

    def _recorder(self, run_id: str | None) -> tuple[RunRecorder, bool]:
        if run_id is not None:
            return RunRecorder(self.gateway.event_log, run_id), False
        current = current_recorder()
        if current is not None:
            return current, False
        return RunRecorder(self.gateway.event_log), True


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
    value = options.get("idle_timeout_secs", DEFAULT_IDLE_TIMEOUT_S)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"streaming idle_timeout_secs must be a positive number, got {value!r}")
    return float(value)
