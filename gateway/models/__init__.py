"""Chat models the runner can drive: the interface, an OpenAI-compatible client and offline stand-ins.

Also the embedders of the semantic router, and the providers that model names resolve through.
"""

from gateway.errors import ModelAuthError, ModelError, ModelNotConfigured, ScriptExhaustedError
from gateway.models.base import (
    ChatMessage,
    ChatModel,
    ModelResponse,
    ModelSettings,
    ModelStreamItem,
    TextDelta,
    TokenUsage,
    ToolCall,
    ToolSpec,
)
from gateway.models.embeddings import Embedder, OfflineEmbedder, OpenAIEmbedder
from gateway.models.offline import OfflineModel
from gateway.models.openai import OpenAIChatModel
from gateway.models.providers import Providers, ProviderSettings, parse_model_name
from gateway.models.scripted import ScriptedModel

__all__ = [
    "ChatMessage",
    "ChatModel",
    "Embedder",
    "ModelAuthError",
    "ModelError",
    "ModelNotConfigured",
    "ModelResponse",
    "ModelSettings",
    "ModelStreamItem",
    "OfflineEmbedder",
    "OfflineModel",
    "OpenAIChatModel",
    "OpenAIEmbedder",
    "ProviderSettings",
    "Providers",
    "ScriptExhaustedError",
    "ScriptedModel",
    "TextDelta",
    "TokenUsage",
    "ToolCall",
    "ToolSpec",
    "parse_model_name",
]
