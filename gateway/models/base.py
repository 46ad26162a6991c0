"""The chat-model interface the swarm runner drives.

Messages use the OpenAI chat shape (plain dicts: ``role`` is system, user, assistant
or tool; assistant messages may carry ``tool_calls``; tool messages carry
``tool_call_id``), because that is what every OpenAI-compatible provider speaks and it
keeps the runner free of translation code.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import orjson

ChatMessage = dict[str, Any]

# Conventions the swarm runner writes and models read. They live here, where both can
# import them (gateway.models must not import gateway.swarm).

HANDOFF_SUCCESS = "HANDOFF_SUCCESS"
"""``status`` of the tool result the runner records for a transfer it carried out."""

RAW_ARGUMENTS_KEY = "_raw"
"""A model's tool arguments that were not a JSON object arrive as ``{RAW_ARGUMENTS_KEY: text}``."""

_TRANSFER_DESCRIPTION = "Hand off the dialogue to '{target}'. Target agent specialty: {specialty}"
_BEFORE_TARGET, _AFTER_TARGET = _TRANSFER_DESCRIPTION.split("{target}")
_TRANSFER_DESCRIPTION_PARSE = re.compile(  # built from the template, so rewording it cannot break the reader
    "^" + re.escape(_BEFORE_TARGET) + "(.*?)" + re.escape(_AFTER_TARGET.split("{specialty}")[0].rstrip()) + r"\s*(.*)$",
    re.S,
)


def transfer_description(target: str, specialty: str) -> str:
    """What a ``transfer_to_<target>`` tool tells the model; ``parse_transfer_description`` reads it back."""
    return _TRANSFER_DESCRIPTION.format(target=target, specialty=specialty)


def parse_transfer_description(description: str) -> tuple[str, str] | None:
    """(target name, specialty) from a description ``transfer_description`` wrote; None for any other text."""
    match = _TRANSFER_DESCRIPTION_PARSE.match(description.strip())
    return (match.group(1), match.group(2) or "") if match else None


@dataclass(frozen=True)
class ToolSpec:
    """A function the model may call: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class TokenUsage:
    """Token counts a provider reported for one call."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ModelResponse:
    """One complete assistant turn: text, tool calls, or both."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    cost_usd: float = 0.0
    usage: TokenUsage | None = None

    def to_message(self) -> ChatMessage:
        """The assistant message to append to the history."""
        message: ChatMessage = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": orjson.dumps(c.arguments).decode()},
                }
                for c in self.tool_calls
            ]
        return message


@dataclass(frozen=True)
class TextDelta:
    """A piece of assistant text, streamed as the model produces it."""

    text: str


ModelStreamItem = TextDelta | ModelResponse

_WORD_PIECE = re.compile(r"\S+\s*|\s+")


async def replay(response: ModelResponse) -> AsyncGenerator[ModelStreamItem, None]:
    """A finished response as a stream (its text word by word, then itself), for models that compute at once."""
    for piece in _WORD_PIECE.findall(response.content):
        yield TextDelta(piece)
    yield response


ToolChoice = str | dict[str, Any]
"""``auto``, ``none``, ``required``, a tool's name (that tool must be called), or the provider's own object."""


@dataclass(frozen=True)
class ModelSettings:
    """How the agent asks its model to use the tools offered (OpenAI swarm's ``Agent`` fields).

    ``tool_choice`` None leaves it to the provider (``auto``); ``parallel_tool_calls`` says
    whether one response may ask for several tools. Both reach the provider only when tools
    are offered (an OpenAI-compatible endpoint refuses them otherwise).
    """

    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool = True

    def openai_tool_choice(self) -> ToolChoice | None:
        """``tool_choice`` as the chat-completions API spells it: a tool's name becomes a function object."""
        if isinstance(self.tool_choice, str) and self.tool_choice not in _TOOL_CHOICE_WORDS:
            return {"type": "function", "function": {"name": self.tool_choice}}
        return self.tool_choice


DEFAULT_SETTINGS = ModelSettings()
_TOOL_CHOICE_WORDS = frozenset({"auto", "none", "required"})


def model_identity(model: object) -> tuple[str, str]:
    """(provider, model name) for spans, events and metrics: a model's ``system`` and ``model``, else its class."""
    kind = type(model).__name__
    return str(getattr(model, "system", kind)), str(getattr(model, "model", kind))


@runtime_checkable
class ChatModel(Protocol):
    """A chat model with tools. ``stream`` yields TextDelta items and ends with one ModelResponse.

    ``settings`` carries the agent's ``tool_choice`` and ``parallel_tool_calls``; None is
    ``DEFAULT_SETTINGS``.
    """

    async def complete(
        self, messages: list[ChatMessage], tools: list[ToolSpec], settings: ModelSettings | None = None
    ) -> ModelResponse: ...

    def stream(
        self, messages: list[ChatMessage], tools: list[ToolSpec], settings: ModelSettings | None = None
    ) -> AsyncIterator[ModelStreamItem]: ...
