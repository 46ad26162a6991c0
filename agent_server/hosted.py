"""How an agent is written: an async function or async generator of one ``TaskContext``.

An async generator yields progress as it goes; an async function returns its answer.
What either may produce:

- ``str`` or ``TextChunk``: text appended to artifact 0 (one stream line each);
- ``dict`` or ``DataChunk``: a data part appended to artifact 0;
- ``protocol.Artifact``: sent as given;
- ``protocol.Message``: the status message of the final state; an agent that produces nothing
  else answers with it alone on the standard bindings (``SendMessage``'s ``{"message": ...}``);
- ``InputRequired``: ends this send in state ``input-required``; the next ``tasks/send``
  with the same task id calls the agent again with the new message and the history;
- ``Failed``: ends this send in state ``failed`` with its text as the status message (an
  exception does too, with its type in the message and its traceback in the log: ``Failed``
  is for a failure the agent expected, such as one it relays);
- ``Handoff``: a ``handoff`` stream line and ``metadata.handoff``; the task then completes.

Cancellation reaches the agent as anyio's cancellation exception at its next ``await``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from agent_server.http.auth import Principal
from protocol import AgentCard, AgentSkill, FilePart, Message
from protocol.card import DEFAULT_INPUT_MODES
from protocol.hop_limits import HopLimits

AgentHandler = Callable[["TaskContext"], Any]


@dataclass
class TaskContext:
    """What the agent gets for one send: the new message, what came before it, who sent it, within which limits.

    ``caller`` is the principal of the token the task was sent with (None on a server
    without tokens, or when the task manager is used in-process). ``limits``: the deadline
    and budget the caller sent (protocol/hop_limits.py); a ``Gateway`` used in the handler
    keeps its calls within them by itself (agent_server/hop.py).
    """

    task_id: str
    session_id: str
    message: Message
    history: list[Message] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    caller: Principal | None = None
    limits: HopLimits = field(default_factory=HopLimits)

    @property
    def text(self) -> str:
        """The text of the new message."""
        return self.message.text

    @property
    def deadline_ms(self) -> int | None:
        """When the caller stops waiting, in milliseconds since the Unix epoch; None: it did not say."""
        return self.limits.deadline_ms

    @property
    def budget_usd(self) -> float | None:
        """What the caller allows this send to cost, sub-calls included, in US dollars; None: no limit."""
        return self.limits.budget_usd


@dataclass(frozen=True)
class TextChunk:
    text: str
    cost_usd: float = 0.0


@dataclass(frozen=True)
class DataChunk:
    data: dict[str, Any]
    cost_usd: float = 0.0


@dataclass(frozen=True)
class InputRequired:
    """Ask the caller for more input; ``text`` becomes the status message."""

    text: str


@dataclass(frozen=True)
class Failed:
    """End the send ``failed``; ``text`` becomes the status message."""

    text: str


@dataclass(frozen=True)
class Handoff:
    """Ask the coordinator to hand the conversation to ``target``."""

    target: str
    reason: str | None = None
    payload: dict[str, Any] | None = None


@dataclass
class HostedAgent:
    """An agent handler with the name, description, skills and input media types its card advertises.

    ``input_modes``: the media types of the file parts it takes; a part of another declared
    type is refused (415, -32005) on every binding, one without a type is let through.
    """

    name: str
    handler: AgentHandler
    description: str = ""
    skills: list[AgentSkill] = field(default_factory=list)
    input_modes: list[str] = field(default_factory=lambda: list(DEFAULT_INPUT_MODES))

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("an agent needs a non-empty name")
        if not callable(self.handler):
            raise TypeError(f"the handler of agent {self.name!r} is not callable: {self.handler!r}")
        self.skills = [_as_skill(skill) for skill in self.skills]

    def __call__(self, ctx: TaskContext) -> Any:
        """Call the handler directly, e.g. in a unit test."""
        return self.handler(ctx)

    def card(self, url: str) -> AgentCard:
        return AgentCard.standard(
            name=self.name, url=url, description=self.description, skills=self.skills, input_modes=self.input_modes
        )

    def refused_media_type(self, message: Message) -> str | None:
        """The first media type of ``message`` that this agent does not take, if any."""
        for part in message.parts:
            media_type = part.file.mime_type if isinstance(part, FilePart) else None
            if media_type and media_type not in self.input_modes:
                return media_type
        return None


@overload
def agent(fn: AgentHandler, /) -> HostedAgent: ...


@overload
def agent(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    skills: Sequence[AgentSkill | Mapping[str, Any]] | None = None,
) -> Callable[[AgentHandler], HostedAgent]: ...


def agent(
    fn: AgentHandler | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    skills: Sequence[AgentSkill | Mapping[str, Any]] | None = None,
) -> HostedAgent | Callable[[AgentHandler], HostedAgent]:
    """Decorator, bare (``@agent``) or with options (``@agent(name="echo")``)."""

    def wrap(handler: AgentHandler) -> HostedAgent:
        return HostedAgent(
            name=name or _name_of(handler),
            handler=handler,
            description=description if description is not None else (inspect.getdoc(handler) or ""),
            skills=list(skills or []),  # type: ignore[arg-type]
        )

    return wrap(fn) if fn is not None else wrap


def as_hosted_agent(obj: HostedAgent | AgentHandler) -> HostedAgent:
    """A HostedAgent as is; a bare function named by ``__name__`` and described by its docstring."""
    if isinstance(obj, HostedAgent):
        return obj
    if callable(obj):
        return agent(obj)
    raise TypeError(f"expected a HostedAgent or an async function, got {type(obj).__name__}")


def _name_of(handler: AgentHandler) -> str:
    return getattr(handler, "__name__", None) or type(handler).__name__


def _as_skill(skill: AgentSkill | Mapping[str, Any]) -> AgentSkill:
    return skill if isinstance(skill, AgentSkill) else AgentSkill.model_validate(skill)
