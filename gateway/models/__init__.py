"""Chat models the runner can drive: the interface, an OpenAI-compatible client and offline stand-ins.

Also the embedders of the semantic router, and the providers that model names resolve through.

The names are imported on first use (PEP 562): a module that needs only ``gateway.models.base``
does not load httpx with the OpenAI-compatible client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.lazy import lazy_exports

if TYPE_CHECKING:
    from gateway.errors import (
        ModelAuthError as ModelAuthError,
        ModelError as ModelError,
        ModelNotConfigured as ModelNotConfigured,
        ScriptExhaustedError as ScriptExhaustedError,
    )
    from gateway.models.base import (
        ChatMessage as ChatMessage,
        ChatModel as ChatModel,
        ModelResponse as ModelResponse,
        ModelSettings as ModelSettings,
        ModelStreamItem as ModelStreamItem,
        TextDelta as TextDelta,
        TokenUsage as TokenUsage,
        ToolCall as ToolCall,
        ToolSpec as ToolSpec,
    )
    from gateway.models.embeddings import (
        Embedder as Embedder,
        OfflineEmbedder as OfflineEmbedder,
        OpenAIEmbedder as OpenAIEmbedder,
    )
    from gateway.models.offline import OfflineModel as OfflineModel
    from gateway.models.openai import OpenAIChatModel as OpenAIChatModel
    from gateway.models.providers import (
        Providers as Providers,
        ProviderSettings as ProviderSettings,
        parse_model_name as parse_model_name,
    )
    from gateway.models.scripted import ScriptedModel as ScriptedModel


__getattr__ = lazy_exports(__name__)
