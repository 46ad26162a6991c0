"""One interface for every transport: an agent the gateway can send a task to.

A stream is an async context manager yielding an async iterator, so that whatever a
transport holds open (an HTTP response, an MCP call running in a task) is closed when the
caller's block ends, in the caller's task. Its items are parsed A2A stream events, plus
``RawLine`` for a line that is not one, ``OversizedLine`` for a line over the limit,
``SkippedBytes`` for bytes that are not UTF-8 dropped from the next line, and
``StreamTooLarge`` when the whole stream grew past its limit (the last item).
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable
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


@dataclass(frozen=True)
class StreamTooLarge:
    """The stream sent more than ``limit`` bytes in all (``size`` when it was noticed); nothing more is read."""

    size: int
    limit: int


StreamItem = StatusEvent | ArtifactEvent | HandoffEvent | RawLine | OversizedLine | SkippedBytes | StreamTooLarge


class Peer(abc.ABC):
    """An agent reachable by URI. Errors are ``gateway.errors.AgentToolError`` subclasses."""

    uri: str

    @abc.abstractmethod
    async def send(self, params: TaskSendParams, on_sent: Callable[[], None] | None = None) -> Task:
        """Run one turn to its end (or to ``input-required``) and return the task.

        ``on_sent`` is called once the request is on its way (for HTTP: written on a
        connection, after any wait for one), so a reply deadline counts only the agent's time.
        """

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
