"""A ChatModel that plays back a fixed script, so runner tests can dictate every turn."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from gateway.errors import ScriptExhaustedError
from gateway.models.base import (
    DEFAULT_SETTINGS,
    ChatMessage,
    ModelResponse,
    ModelSettings,
    ModelStreamItem,
    ToolSpec,
    replay,
)

ScriptStep = ModelResponse | Callable[[list[ChatMessage]], ModelResponse]


@dataclass(frozen=True)
class ScriptedCall:
    """What the model was shown on one call (copied, so later history edits do not leak in)."""

    messages: list[ChatMessage]
    tools: list[ToolSpec]
    settings: ModelSettings = DEFAULT_SETTINGS


class ScriptedModel:
    """Returns ``responses`` in order; a callable step computes its response from the messages.

    Every call is recorded in ``calls``; one call past the end raises ScriptExhaustedError.
    """

    system = "scripted"
    model = "scripted"

    def __init__(self, responses: list[ScriptStep]) -> None:
        self._steps = list(responses)
        self.calls: list[ScriptedCall] = []

    @property
    def remaining(self) -> int:
        return len(self._steps) - len(self.calls)

    async def complete(
        self, messages: list[ChatMessage], tools: list[ToolSpec], settings: ModelSettings | None = None
    ) -> ModelResponse:
        return self._next(messages, tools, settings or DEFAULT_SETTINGS)

    def stream(
        self, messages: list[ChatMessage], tools: list[ToolSpec], settings: ModelSettings | None = None
    ) -> AsyncIterator[ModelStreamItem]:
        return replay(self._next(messages, tools, settings or DEFAULT_SETTINGS))

    def _next(self, messages: list[ChatMessage], tools: list[ToolSpec], settings: ModelSettings) -> ModelResponse:
        position = len(self.calls)
        if position >= len(self._steps):
            last = messages[-1] if messages else None
            raise ScriptExhaustedError(
                f"ScriptedModel has no response left: its script holds {len(self._steps)} and call "
                f"{position + 1} was made (last message: {last!r})"
            )
        self.calls.append(ScriptedCall(copy.deepcopy(list(messages)), list(tools), settings))
        step = self._steps[position]
        response = step(messages) if callable(step) else step
        if not isinstance(response, ModelResponse):
            raise TypeError(f"script step {position + 1} returned {type(response).__name__}, not ModelResponse")
        return response
