"""Model names to models: ``offline``, ``PROVIDER:MODEL``, or a plain name such as ``gpt-4o``.

A provider is an OpenAI-compatible endpoint: a base URL and the environment variable that
holds its key. The built-in ``openai`` provider reads ``OPENAI_BASE_URL`` (default
api.openai.com) and ``OPENAI_API_KEY``; a table (the configuration's ``[providers.NAME]``)
adds others or replaces it. A name resolves:

- ``offline``: the shipped deterministic model (no network, no key);
- ``NAME:MODEL`` when NAME is ``openai`` or a provider of the table (``ollama:llama3.1``;
  the model part may hold colons, ``ollama:qwen2:7b``); a prefix that looks like a provider
  name but is none is an error, so a typo is not sent to OpenAI as a model name;
- anything else (``gpt-4o``, ``gemini-2.5-flash``, ``llama3.1:8b``): that model at the
  ``openai`` provider, which must be configured: an entry in the table, or either of the
  two variables set. Otherwise ``ModelNotConfigured`` says exactly what to set.

``Providers`` keeps one model per name (and one embedder per name) and closes the HTTP
clients it made on ``aclose``; they open again on next use, so one ``Providers`` may
outlive an event loop. The models it makes read their key from the variable it names
(the model names that variable when a key is refused or missing); ``environ`` (tests)
replaces the process environment for the checks and ``OPENAI_BASE_URL`` only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from gateway.errors import ModelNotConfigured
from gateway.models.base import ChatModel
from gateway.models.embeddings import Embedder, OfflineEmbedder, OpenAIEmbedder
from gateway.models.offline import OfflineModel
from gateway.models.openai import DEFAULT_API_KEY_ENV, DEFAULT_BASE_URL, OpenAIChatModel, OpenAICompatible

OFFLINE = "offline"
OPENAI = "openai"
PROVIDER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}\Z")
"""A provider's name: what may stand before the colon of ``PROVIDER:MODEL``."""
_OPENAI_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL")

NOT_CONFIGURED = (
    "model {name!r} runs at an OpenAI-compatible provider and none is configured: set OPENAI_API_KEY "
    "(for api.openai.com), or OPENAI_BASE_URL (for another OpenAI-compatible server, with OPENAI_API_KEY if it "
    "wants a key), or define [providers.openai] with base_url and api_key_env in the configuration; "
    "model 'offline' needs none of these"
)


@dataclass(frozen=True)
class ProviderSettings:
    """An OpenAI-compatible endpoint; ``api_key_env`` names the variable with its key (None: it takes none).

    ``base_url`` None is only for ``openai``: ``OPENAI_BASE_URL``, else api.openai.com.
    """

    base_url: str | None = None
    api_key_env: str | None = None


@dataclass(frozen=True)
class ModelName:
    """A parsed model name: its provider (``offline``, ``openai`` or a table's) and the model there."""

    provider: str
    model: str


def parse_model_name(
    name: str, providers: Mapping[str, ProviderSettings] | None = None, *, any_provider: bool = False
) -> ModelName:
    """What ``name`` names (see the module docstring); ValueError saying what is wrong with it.

    ``any_provider``: take any provider-like prefix as a provider (to check a name's form alone).
    """
    if not name or name != name.strip() or any(char.isspace() for char in name):
        raise ValueError(
            f"{name!r} is not a model name (expected offline, PROVIDER:MODEL like openai:gpt-4o-mini, "
            "or a model name like gpt-4o)"
        )
    if name == OFFLINE:
        return ModelName(OFFLINE, "")
    prefix, colon, model = name.partition(":")
    if not colon or not PROVIDER_NAME.match(prefix):
        return ModelName(OPENAI, name)
    known = {OPENAI, *(providers or {})}
    if prefix not in known and not any_provider:
        listed = ", ".join(sorted({OFFLINE, *known}))
        raise ValueError(
            f"unknown provider {prefix!r} in model {name!r} (known: {listed}); define [providers.{prefix}] "
            f"with its base_url, or write openai:{name} for a model whose name has a colon"
        )
    if not model:
        raise ValueError(f"model {name!r} names no model after {prefix}:")
    return ModelName(prefix, model)


class Providers:
    """The providers a runner or a gateway resolves model names with; see the module docstring."""

    def __init__(
        self, table: Mapping[str, ProviderSettings] | None = None, *, environ: Mapping[str, str] | None = None
    ) -> None:
        for name, settings in (table or {}).items():
            if not PROVIDER_NAME.match(name) or name == OFFLINE:
                raise ValueError(f"{name!r} cannot name a provider (lower-case letters, digits, '_', '-'; not offline)")
            if name != OPENAI and not settings.base_url:
                raise ValueError(f"provider {name!r} needs a base_url (its OpenAI-compatible endpoint)")
        self.table = dict(table or {})
        self._environ = environ
        self._models: dict[tuple[str, str | None, str | None, tuple[float, float] | None], ChatModel] = {}
        self._embedders: dict[str, Embedder] = {}

    def problem(self, name: str, *, own_endpoint: bool = False) -> str | None:
        """Why ``name`` does not resolve, saying what to set; None when it does.

        ``own_endpoint``: the caller brings its own base URL or key (a configured agent's
        ``base_url`` / ``api_key_env``), so the provider need not be configured.
        """
        try:
            parsed = parse_model_name(name, self.table)
        except ValueError as exc:
            return str(exc)
        if parsed.provider == OFFLINE or own_endpoint:
            return None
        settings = self.table.get(parsed.provider)
        if settings is None:
            if any(self._env(variable) for variable in _OPENAI_ENV):
                return None
            return NOT_CONFIGURED.format(name=name)
        if settings.api_key_env is not None and not self._env(settings.api_key_env):
            return (
                f"model {name!r} runs at provider {parsed.provider!r}, whose key is read from "
                f"{settings.api_key_env}, and that variable is not set"
            )
        return None

    def chat_model(
        self,
        name: str,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        price_per_1k_tokens: tuple[float, float] | None = None,
    ) -> ChatModel:
        """The model ``name`` names (one per name, endpoint and price); ``ModelNotConfigured`` when it cannot be had.

        ``base_url`` or ``api_key_env`` (a configured agent's own) replace the provider's
        endpoint: the key is then read from ``api_key_env`` only, so an endpoint named by
        ``base_url`` alone is sent no key (``OPENAI_API_KEY`` goes to OpenAI's provider only).
        ``price_per_1k_tokens`` (input, output) makes each call's ``cost_usd``.
        """
        key = (name, base_url, api_key_env, price_per_1k_tokens)
        if key not in self._models:
            own = base_url is not None or api_key_env is not None
            parsed = self._resolvable(name, own_endpoint=own)
            if parsed.provider == OFFLINE:
                self._models[key] = OfflineModel()
            else:
                url, key_env = self._endpoint(parsed.provider)
                self._models[key] = OpenAIChatModel(
                    parsed.model,
                    base_url=base_url or url,
                    api_key_env=api_key_env if own else key_env,
                    price_per_1k_tokens=price_per_1k_tokens,
                )
        return self._models[key]

    def embedder(self, name: str) -> Embedder:
        """The embedder ``name`` names: ``offline`` (the shipped OfflineEmbedder) or a model at a provider."""
        if name not in self._embedders:
            parsed = self._resolvable(name)
            if parsed.provider == OFFLINE:
                self._embedders[name] = OfflineEmbedder()
            else:
                url, key_env = self._endpoint(parsed.provider)
                self._embedders[name] = OpenAIEmbedder(parsed.model, base_url=url, api_key_env=key_env)
        return self._embedders[name]

    async def aclose(self) -> None:
        """Close the HTTP clients of the models and embedders made here (they reopen on next use)."""
        for made in [*self._models.values(), *self._embedders.values()]:
            if isinstance(made, OpenAICompatible):
                await made.aclose()

    def _resolvable(self, name: str, *, own_endpoint: bool = False) -> ModelName:
        problem = self.problem(name, own_endpoint=own_endpoint)
        if problem is not None:
            raise ModelNotConfigured(problem)
        return parse_model_name(name, self.table)

    def _endpoint(self, provider: str) -> tuple[str, str | None]:
        """Base URL of ``provider`` and the variable of its key (None: no key; only ``openai`` reads OPENAI_API_KEY)."""
        settings = self.table.get(provider, ProviderSettings(api_key_env=DEFAULT_API_KEY_ENV))
        base_url = settings.base_url or self._env("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        return base_url, settings.api_key_env

    def _env(self, variable: str) -> str:
        environ = os.environ if self._environ is None else self._environ
        return environ.get(variable, "").strip()
