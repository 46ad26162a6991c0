"""One interface for every transport: an agent the gateway can send a task to.

A stream is an async context manager yielding an async iterator, so that whatever a
transport holds open (an HTTP response, an MCP call running in a task) is closed when the
caller's block ends, in the caller's task. Its items are parsed A2A stream events, plus
``RawLine`` for a line that is not one, ``OversizedLine`` for a line over the limit and
``SkippedBytes`` for bytes that are not UTF-8 dropped from the next line.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

from protocol import (
    AgentCard,
    ArtifactEvent,
    HandoffEvent,
    OversizedLine,
    SkippedBytes,
    StatusEvent,
    Task,
    TaskSendParams,
)


@dataclass(frozen=True)
class RawLine:
    """A stream line that is not a valid event: the text of malformed JSON, or an object that is no event."""

    raw: str | dict[str, Any]


StreamItem = StatusEvent | ArtifactEvent | HandoffEvent | RawLine | OversizedLine | SkippedBytes


class Peer(abc.ABC):
    """An agent reachable by URI. Errors are ``gateway.errors.AgentToolError`` subclasses."""

    uri: str

    @abc.abstractmethod
    async def send(self, params: TaskSendParams) -> Task:
        """Run one turn to its end (or to ``input-required``) and return the task."""

    @abc.abstractmethod
    def subscribe(self, params: TaskSendParams) -> AbstractAsyncContextManager[AsyncIterator[StreamItem]]:
        """Start a turn and stream its events as they arrive."""

    @abc.abstractmethod
    async def cancel(self, task_id: str) -> bool:
        """Ask the peer to stop the task; True when it acknowledged (the task is canceled)."""

    @abc.abstractmethod
    async def get(self, task_id: str) -> Task:
        """The task as the peer has it now."""

    @abc.abstractmethod
    async def card(self) -> AgentCard: ...
