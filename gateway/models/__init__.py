"""Chat models the runner can drive: the interface, an OpenAI-compatible client and offline stand-ins."""

from gateway.errors import ModelAuthError, ModelError, ScriptExhaustedError
from gateway.models.base import (
    ChatMessage,
    ChatModel,
    ModelResponse,
    ModelStreamItem,
    TextDelta,
    TokenUsage,
    ToolCall,
    ToolSpec,
)
from gateway.models.offline import OfflineModel
from gateway.models.openai import OpenAIChatModel
from gateway.models.scripted import ScriptedModel

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ModelAuthError",
    "ModelError",
    "ModelResponse",
    "ModelStreamItem",
    "OfflineModel",
    "OpenAIChatModel",
    "ScriptExhaustedError",
    "ScriptedModel",
    "TextDelta",
    "TokenUsage",
    "ToolCall",
    "ToolSpec",
]
