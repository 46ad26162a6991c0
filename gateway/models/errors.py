"""Errors a chat model raises, so callers can tell a bad key from a flaky provider."""

from __future__ import annotations


class ModelError(Exception):
    """A model call failed; the message carries the provider's own explanation."""

    def __init__(self, message: str, *, status_code: int | None = None, provider_message: str | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.provider_message = provider_message


class ModelAuthError(ModelError):
    """The provider refused the credentials (401/403); retrying will not help."""


class ScriptExhaustedError(ModelError):
    """A ScriptedModel was asked for more turns than its script holds."""
