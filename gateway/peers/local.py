"""An agent in this process (``local://NAME``): the agent server's TaskManager, without HTTP.

Same semantics and events as over the wire, because it is the same TaskManager the HTTP
app drives; a ``ProtocolError`` becomes the ``PeerHTTPError`` the HTTP layer would answer.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing, asynccontextmanager, contextmanager
from typing import Any

import anyio
from anyio.abc import TaskStatus

from agent_server import HostedAgent, MemoryTaskStore, TaskManager, as_hosted_agent
from gateway.errors import PeerHTTPError
from gateway.peers.base import OnSent, OnTask, Peer, Received, StreamItem
from gateway.uri import LocalTarget
from protocol import AgentCard, ProtocolError, StreamEvent, Task, TaskSendParams, TaskState


class LocalAgentHost:
    """A registered agent and its TaskManager, run inside the gateway's task group."""

    def __init__(self, name: str, agent: HostedAgent | Any) -> None:
        self.name = name
        self.agent = as_hosted_agent(agent)
        self.manager = TaskManager(self.agent, MemoryTaskStore())
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._stopped = anyio.Event()

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            async with self.manager.running():
                self._ready.set()
                task_status.started()
                await self._stop.wait()
        finally:
            self._stopped.set()

    async def running_manager(self) -> TaskManager:
        await self._ready.wait()
        return self.manager

    async def aclose(self) -> None:
        self._stop.set()
        if self._ready.is_set():
            await self._stopped.wait()


class LocalPeer(Peer):
    binding = "local"

    def __init__(self, target: LocalTarget, host: LocalAgentHost) -> None:
        self.uri = target.uri
        self._host = host

    async def send(self, params: TaskSendParams, on_sent: OnSent | None = None, on_task: OnTask | None = None) -> Task:
        manager = await self._host.running_manager()
        if on_sent is not None:
            on_sent()
        with _as_http_errors():
            return await manager.send(params)

    @asynccontextmanager
    async def subscribe(self, params: TaskSendParams) -> AsyncIterator[AsyncIterator[StreamItem]]:
        manager = await self._host.running_manager()
        async with aclosing(manager.subscribe(params)) as events:
            with _as_http_errors():
                first = await anext(events)
            async with aclosing(_chain(first, events)) as chained:
                yield chained

    @asynccontextmanager
    async def resubscribe(
        self, task_id: str, after_seq: int, received: Received | None = None
    ) -> AsyncIterator[AsyncIterator[StreamItem]]:
        manager = await self._host.running_manager()
        with _as_http_errors():
            events = await manager.resubscribe(task_id, after_seq)
        async with aclosing(events) as followed:  # type: ignore[type-var]
            yield followed

    async def cancel(self, task_id: str) -> bool:
        manager = await self._host.running_manager()
        try:
            task = await manager.cancel(task_id)
        except ProtocolError:
            return False
        return task.status.state == TaskState.CANCELED

    async def get(self, task_id: str) -> Task:
        manager = await self._host.running_manager()
        with _as_http_errors():
            return await manager.get(task_id)

    async def card(self) -> AgentCard:
        return self._host.agent.card(self.uri)


async def _chain(first: StreamEvent, rest: AsyncIterator[StreamEvent]) -> AsyncGenerator[StreamItem, None]:
    """``first`` then ``rest``. Both this generator and ``rest`` are closed by ``subscribe`` (``aclosing``)."""
    yield first
    async for event in rest:
        yield event


@contextmanager
def _as_http_errors() -> Iterator[None]:
    """A ``ProtocolError`` becomes the ``PeerHTTPError`` the HTTP binding would have answered."""
    try:
        yield
    except ProtocolError as exc:
        raise PeerHTTPError(exc.http_status, exc.message, code=exc.code, body=exc.to_body().to_wire()) from exc
