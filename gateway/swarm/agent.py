"""A swarm agent: a name, instructions, a model, domain tools and peers it may hand off to.

Written as OpenAI's swarm writes it too: ``Agent(name=..., model="gpt-4o", functions=[...],
tool_choice=..., parallel_tool_calls=False)``, ``Agent()`` alone (swarm's name "Agent"), and
``agent.functions.append(fn)`` after the fact. A model given by name resolves through the
runner's providers (gateway/models/providers.py) when a turn starts.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from gateway import defaults
from gateway.models.base import ChatModel, ModelSettings, ToolChoice
from gateway.models.providers import Providers
from gateway.swarm.handoff import specialty_of, transfer_tools
from gateway.swarm.member import SwarmMember
from gateway.swarm.tool_list import ToolList, domain_tool
from gateway.tools import Tool

Instructions = str | Callable[[dict[str, Any]], str]


class Agent:
    """An in-process agent whose model loop runs inside the Runner.

    ``instructions`` may be a string or a function of the session's context variables;
    ``description`` (optional) is what other agents' transfer tools say about this one,
    by default a summary of the instructions. ``model`` is a ChatModel, a name (``"gpt-4o"``,
    ``"ollama:llama3.1"``, ``"offline"``) or None (the offline model). ``functions`` is
    swarm's name for ``tools`` (both may be given; both read and grow the same list,
    tool_list.py). ``tool_choice`` and
    ``parallel_tool_calls`` go to the model with every call; the runner also runs the tool
    calls of one response concurrently only when ``parallel_tool_calls`` is true.
    ``examples``: what users say when they want this agent, for the semantic router.
    """

    def __init__(
        self,
        name: str = defaults.AGENT_NAME,
        instructions: Instructions = defaults.AGENT_INSTRUCTIONS,
        model: ChatModel | str | None = None,
        tools: Sequence[Any] = (),
        handoffs: Sequence[SwarmMember] = (),
        *,
        description: str | None = None,
        functions: Sequence[Any] = (),
        tool_choice: ToolChoice | None = None,
        parallel_tool_calls: bool = True,
        examples: Sequence[str] = (),
    ) -> None:
        if not name or not name.strip():
            raise ValueError("an agent needs a non-empty name")
        self.name = name
        self.instructions = instructions
        self.model = model
        self.description = description
        self.tool_choice = tool_choice
        self.parallel_tool_calls = parallel_tool_calls
        self.examples = tuple(examples)
        self._tools = ToolList([*tools, *functions])
        self._handoffs: list[SwarmMember] = []
        for other in handoffs:
            self.add_handoff(other)

    @property
    def handoffs(self) -> list[SwarmMember]:
        return list(self._handoffs)

    @property
    def tools(self) -> list[Tool]:
        """The domain tools, the list itself: what is appended to it becomes a tool."""
        return self._tools

    @tools.setter
    def tools(self, tools: Sequence[Any]) -> None:
        self._tools = ToolList(tools)

    functions = tools
    """swarm's name for ``tools``: the same list (``agent.functions.append(fn)`` adds a tool)."""

    @property
    def settings(self) -> ModelSettings:
        """What every call of this agent's model is told about tool use."""
        return ModelSettings(tool_choice=self.tool_choice, parallel_tool_calls=self.parallel_tool_calls)

    @property
    def specialty(self) -> str:
        """What transfer tools pointing here say this agent is for."""
        if self.description:
            return specialty_of(self.description)
        if isinstance(self.instructions, str):
            return specialty_of(self.instructions)
        return specialty_of(self.instructions.__doc__ or self._instructions_without_context())

    def _instructions_without_context(self) -> str:
        """Callable instructions rendered with no context variables; the name if that fails.

        Building a transfer tool must never fail because of a template, so any error of the
        user's function is swallowed here (the turn itself calls it with the real context).
        """
        try:
            return self.get_instructions({}).strip() or self.name
        except Exception:
            return self.name

    def add_handoff(self, other: SwarmMember) -> None:
        """Let this agent transfer the conversation to ``other``; a same-named peer is replaced."""
        if other is self or other.name == self.name:
            raise ValueError(f"agent {self.name!r} cannot hand off to itself")
        self._handoffs = [h for h in self._handoffs if h.name != other.name]
        self._handoffs.append(other)

    def remove_handoff(self, name: str) -> bool:
        """Stop offering the transfer to the peer named ``name``; False when there was none."""
        kept = [h for h in self._handoffs if h.name != name]
        removed = len(kept) != len(self._handoffs)
        self._handoffs = kept
        return removed

    def add_tool(self, tool_like: Any) -> Tool:
        """Add a domain tool: a function (sync or async), a FunctionTool or an agent tool."""
        tool = domain_tool(tool_like)
        self._tools.append(tool)
        return tool

    def get_instructions(self, context_variables: dict[str, Any] | None = None) -> str:
        """A missing context variable reads as "" (as in OpenAI's swarm), so a template never breaks a turn."""
        if isinstance(self.instructions, str):
            return self.instructions
        return self.instructions(defaultdict(str, context_variables or {}))

    def get_all_tools(self) -> list[Tool]:
        """Domain tools, then one transfer tool per handoff target (names unique per agent)."""
        return [*self.tools, *transfer_tools(self._handoffs, taken=[t.name for t in self.tools])]

    def get_model(self, providers: Providers | None = None) -> ChatModel:
        """The agent's model; a shared offline model when none was given, so demos need no key.

        A name resolves through ``providers`` (the runner passes its own, which keeps and
        closes the models it makes); without them through a new ``Providers()`` reading the
        environment. ``ModelNotConfigured`` says what to set when no provider serves the
        name. Reading it changes nothing (``agent.model`` stays as given).
        """
        if isinstance(self.model, str):
            return (providers or Providers()).chat_model(self.model)
        return self.model if self.model is not None else _default_model()

    @property
    def model_name(self) -> str:
        """The name the model was given by, else the class name of the model (what the gateway service shows)."""
        return self.model if isinstance(self.model, str) else type(self.get_model()).__name__

    def __repr__(self) -> str:
        tools = [t.name for t in self.tools]
        return f"Agent(name={self.name!r}, tools={tools}, handoffs={[h.name for h in self._handoffs]})"


@functools.cache
def _default_model() -> ChatModel:
    """One OfflineModel for every agent without a model (it is stateless)."""
    from gateway.models.offline import OfflineModel

    return OfflineModel()
