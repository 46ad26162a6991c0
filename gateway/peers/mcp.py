"""A tool on an MCP server, seen as an agent, through the official SDK's ``mcp.Client``.

One ``MCPConnection`` per server (a spawned stdio command or a streamable-HTTP URL) is
opened on first use inside the gateway's task group and shared by all its tools. A call
maps onto the A2A shapes the rest of the gateway reads: progress notifications become
``working`` status lines (not output), the tool result becomes one artifact and a final
``completed`` (or ``failed`` when ``isError``) status. Cancel is MCP cancellation: the
call's cancel scope is cancelled and the SDK sends ``notifications/cancelled`` (over
streamable HTTP it aborts the request, which is the 2026 wire's spelling of the same).
MCP has no acknowledgement, so ``cancel`` returns True once the call was abandoned.

Text input goes into the tool's one string argument (its only required string, else one
called ``input``, else its only string); a ``data`` part in the message is passed as the
arguments object itself. A result's ``_meta.cost_usd``, when present, is its cost.

Errors are ``AgentToolError`` subclasses, as for every peer: a result that cannot be read
as A2A parts (or any other unexpected failure of the SDK's call) is a ``PeerProtocolError``
with reason ``bad_answer``. A stream's events go through a bounded buffer: a consumer that
falls behind holds back the progress notifications (each delivered in its own task by the
SDK), which are dropped once the call has ended.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import anyio
import httpx2
import mcp_types
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types.jsonrpc import CONNECTION_CLOSED
from pydantic import ValidationError

from gateway.errors import AgentToolError, AgentToolTimeout, PeerConnectionError, PeerProtocolError
from gateway.peers.base import OnSent, OnTask, Peer, StreamItem
from gateway.uri import MCPStdioTarget, MCPTarget
from protocol import (
    AgentCard,
    AgentSkill,
    Artifact,
    ArtifactEvent,
    DataPart,
    FileContent,
    FilePart,
    Message,
    Part,
    StatusEvent,
    Task,
    TaskSendParams,
    TaskState,
    TaskStatus as A2ATaskStatus,
    TextPart,
    parts_text,
)

logger = logging.getLogger(__name__)

STREAM_BUFFER = 16
"""Events of a streamed call held for a consumer that has not read them yet (then the producer waits)."""


@dataclass
class _Live:
    """An open client, the event that ends it, and the tool listing fetched through it."""

    client: Client
    stop: anyio.Event
    stopped: anyio.Event
    tools: dict[str, mcp_types.Tool] = field(default_factory=dict)


class MCPConnection:
    """One live ``mcp.Client`` for one server, reopened on the next use if it died."""

    def __init__(
        self, target: MCPTarget, task_group: TaskGroup, *, connect_timeout_s: float, token: str | None = None
    ) -> None:
        self.target = target
        self.connect_timeout_s = connect_timeout_s
        self._token = token
        self._task_group = task_group
        self._lock = anyio.Lock()
        self._live: _Live | None = None

    async def client(self) -> Client:
        return (await self._session()).client

    async def tool(self, name: str) -> mcp_types.Tool:
        """The tool's listing (for its input schema), fetched once per connection."""
        live = await self._session()
        if name not in live.tools:
            try:
                listing = await live.client.list_tools()
            except MCPError as exc:
                raise self.error_for(live.client, exc) from exc
            live.tools = {tool.name: tool for tool in listing.tools}
        if name not in live.tools:
            known = ", ".join(sorted(live.tools)) or "none"
            raise PeerProtocolError(f"the MCP server has no tool {name!r} (it has: {known})", reason="unknown_tool")
        return live.tools[name]

    def discard(self, client: Client) -> None:
        """Forget a connection a call found closed, so that the next use reconnects."""
        live = self._live
        if live is not None and live.client is client:
            self._live = None
            live.stop.set()

    async def aclose(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.stop.set()
            await live.stopped.wait()

    async def _session(self) -> _Live:
        async with self._lock:
            if self._live is None or self._live.stopped.is_set():
                await self._connect()
            assert self._live is not None
            return self._live

    def error_for(self, client: Client, exc: MCPError) -> AgentToolError:
        """The error for a failed request; a closed connection is discarded on the way."""
        if exc.code == CONNECTION_CLOSED:
            self.discard(client)
        return _mcp_error(exc, self.target.uri)

    async def _connect(self) -> None:
        """Open a client in the gateway's task group; fail at the connect deadline, not after the cleanup.

        Shutting a server down that did not connect (the SDK waits for a stdio process to
        exit) goes on in the background, so it does not add to the caller's deadline.
        """
        attempt = _Attempt()
        self._task_group.start_soon(self._serve, attempt)
        try:
            with anyio.move_on_after(self.connect_timeout_s):
                await attempt.settled.wait()
        finally:
            if attempt.live is None:
                attempt.scope.cancel()
            else:
                self._live = attempt.live
        if attempt.live is not None:
            return
        if attempt.error is not None:
            raise attempt.error
        raise AgentToolTimeout(
            f"the MCP server of {self.target.uri} did not connect within {self.connect_timeout_s:g} s",
            reason="connect_timeout",
            seconds=self.connect_timeout_s,
        )

    async def _serve(self, attempt: _Attempt) -> None:
        """Hold the client open until stopped; never raise into the gateway's task group."""
        stop, stopped = anyio.Event(), anyio.Event()
        try:
            with attempt.scope:
                async with AsyncExitStack() as stack:
                    server = await _server_arg(self.target, self._token, stack)
                    client = await stack.enter_async_context(Client(server, read_timeout_seconds=None))
                    attempt.live = _Live(client=client, stop=stop, stopped=stopped)
                    attempt.settled.set()
                    await stop.wait()
        except Exception as exc:
            if attempt.live is None:
                hint = _arguments_hint(self.target)
                attempt.error = PeerConnectionError(
                    f"cannot connect to the MCP server of {self.target.uri}: {exc}{hint}"
                )
            else:
                logger.warning("the MCP connection for %s ended: %s", self.target.uri, exc)
        finally:
            stopped.set()
            attempt.settled.set()


@dataclass
class _Attempt:
    """One try at opening a connection: settled once it is open or has failed."""

    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    settled: anyio.Event = field(default_factory=anyio.Event)
    live: _Live | None = None
    error: AgentToolError | None = None


@dataclass
class _Call:
    scope: anyio.CancelScope
    done: anyio.Event = field(default_factory=anyio.Event)
    waiting: set[anyio.CancelScope] = field(default_factory=set)
    """The progress deliveries waiting for room in the buffer; cancelled when the call ends."""


class MCPPeer(Peer):
    """One tool of an MCP server."""

    binding = "mcp"

    def __init__(self, target: MCPTarget, connection: MCPConnection) -> None:
        self.uri = target.uri
        self.tool = target.tool
        self._connection = connection
        self._calls: dict[str, _Call] = {}

    async def send(self, params: TaskSendParams, on_sent: OnSent | None = None, on_task: OnTask | None = None) -> Task:
        task_id = params.id or _new_task_id()
        client, arguments = await self._prepare(params)
        if on_sent is not None:
            on_sent()
        events: list[StreamItem] = []

        async def collect(item: StreamItem) -> None:
            events.append(item)

        await self._call(client, arguments, task_id, collect)
        return _fold_task(task_id, params, events)

    @asynccontextmanager
    async def subscribe(self, params: TaskSendParams) -> AsyncIterator[AsyncIterator[StreamItem]]:
        task_id = params.id or _new_task_id()
        client, arguments = await self._prepare(params)
        send, receive = anyio.create_memory_object_stream[StreamItem | Exception](STREAM_BUFFER)
        failure: Exception | None = None
        with receive:
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(self._pump, client, arguments, task_id, send)
                try:
                    async with aclosing(_drain(receive)) as items:
                        yield items
                except Exception as exc:
                    failure = exc
                finally:
                    task_group.cancel_scope.cancel()
        if failure is not None:
            raise failure

    async def cancel(self, task_id: str) -> bool:
        call = self._calls.get(task_id)
        if call is None:
            return False
        call.scope.cancel()
        await call.done.wait()
        return True

    async def get(self, task_id: str) -> Task:
        raise PeerProtocolError(f"MCP tools keep no tasks to look up ({self.uri})", reason="unsupported")

    async def card(self) -> AgentCard:
        tool = await self._connection.tool(self.tool)
        return AgentCard(
            name=tool.name,
            description=tool.description,
            url=self.uri,
            skills=[AgentSkill(id=tool.name, name=tool.title or tool.name, description=tool.description)],
        )

    async def _prepare(self, params: TaskSendParams) -> tuple[Client, dict[str, Any]]:
        """Connect (bounded by the connect deadline) and map the input, before any idle clock starts."""
        client = await self._connection.client()
        return client, _arguments(params.message, await self._connection.tool(self.tool))

    async def _pump(
        self,
        client: Client,
        arguments: dict[str, Any],
        task_id: str,
        send: MemoryObjectSendStream[StreamItem | Exception],
    ) -> None:
        """Run the call for ``subscribe``; its error goes to the consumer (raised in its task, never as a group)."""
        with send:
            try:
                await self._call(client, arguments, task_id, send.send)
            except Exception as exc:  # an AgentToolError; anything else (a bug) is raised in the consumer's task too
                await send.send(exc)

    async def _call(
        self, client: Client, arguments: dict[str, Any], task_id: str, emit: Callable[[StreamItem], Awaitable[None]]
    ) -> None:
        """Run the tool call: emit its progress as it arrives, then its result, ending with a final status."""
        seq = itertools.count()
        call = self._calls[task_id] = _Call(scope=anyio.CancelScope())

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            # Runs in a task of the SDK's: wait for room in the buffer only while the call runs.
            if call.done.is_set():
                return
            with anyio.CancelScope() as waiting:
                call.waiting.add(waiting)
                try:
                    await emit(_progress_event(next(seq), task_id, progress, total, message))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    pass
                finally:
                    call.waiting.discard(waiting)

        result: mcp_types.CallToolResult | None = None
        failure: str | None = None
        try:
            with call.scope:
                try:
                    result = await client.call_tool(self.tool, arguments, progress_callback=on_progress)
                except MCPError as exc:
                    if exc.code == CONNECTION_CLOSED:
                        raise self._connection.error_for(client, exc) from exc
                    failure = f"MCP error {exc.code}: {exc.message}"
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
                    self._connection.discard(client)
                    raise PeerConnectionError(f"the connection to the MCP server of {self.uri} broke: {exc}") from exc
                except Exception as exc:
                    # The SDK failed to read the answer (e.g. a result that does not validate).
                    raise self._bad_answer(exc) from exc
        finally:
            self._calls.pop(task_id, None)
            call.done.set()
            for waiting in call.waiting:
                waiting.cancel()
        try:
            events = list(_final_events(seq, task_id, result, failure, canceled=call.scope.cancel_called))
        except (ValidationError, ValueError, TypeError) as exc:
            raise self._bad_answer(exc) from exc
        for event in events:
            await emit(event)

    def _bad_answer(self, exc: Exception) -> PeerProtocolError:
        return PeerProtocolError(
            f"the MCP server of {self.uri} answered a result that cannot be read: {type(exc).__name__}: {exc}",
            reason="bad_answer",
        )


def _arguments_hint(target: MCPTarget) -> str:
    """A command written with its arguments (``mcp+stdio:python server.py#tool``): say that they go in ``?args=``."""
    if not isinstance(target, MCPStdioTarget) or target.args or " " not in target.command.strip():
        return ""
    command, _, args = target.command.strip().partition(" ")
    suggested = f"mcp+stdio:{command}?args={quote(args.strip())}#{target.tool}"
    return (
        f"; the command is {target.command!r} as one program name: arguments go in the query, "
        f"split like a shell line, e.g. {suggested}"
    )


async def _server_arg(target: MCPTarget, token: str | None, stack: AsyncExitStack) -> Any:
    """What ``mcp.Client`` connects to; a token rides on an HTTP client of this connection's own."""
    if isinstance(target, MCPStdioTarget):
        return StdioServerParameters(
            command=target.command, args=list(target.args), env=dict(target.env) or None, cwd=target.cwd
        )
    if token is None:
        return target.url
    http = await stack.enter_async_context(
        httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30.0, read=300.0))
    )
    return streamable_http_client(target.url, http_client=http)


async def _drain(receive: MemoryObjectReceiveStream[StreamItem | Exception]) -> AsyncGenerator[StreamItem, None]:
    async for item in receive:
        if isinstance(item, Exception):
            raise item
        yield item


def _arguments(message: Message, tool: mcp_types.Tool) -> dict[str, Any]:
    data = [part.data for part in message.parts if isinstance(part, DataPart)]
    if data:
        merged: dict[str, Any] = {}
        for item in data:
            merged.update(item)
        return merged
    return {_text_argument(tool): message.text}


def _text_argument(tool: mcp_types.Tool) -> str:
    schema = tool.input_schema or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    strings = [name for name, spec in properties.items() if isinstance(spec, dict) and spec.get("type") == "string"]
    required = [name for name in strings if name in (schema.get("required") or [])]
    if len(required) == 1:
        return required[0]
    if "input" in properties:
        return "input"
    if len(strings) == 1:
        return strings[0]
    raise PeerProtocolError(
        f"cannot tell which argument of MCP tool {tool.name!r} takes the text input "
        f"(string arguments: {', '.join(strings) or 'none'}); pass the arguments as a dict",
        reason="bad_input",
    )


def _progress_event(seq: int, task_id: str, value: float, total: float | None, message: str | None) -> StatusEvent:
    parts: list[Part] = [DataPart(data={"progress": value, "total": total})]
    if message:
        parts.insert(0, TextPart(text=message))
    status = A2ATaskStatus(state=TaskState.WORKING, message=Message(role="agent", parts=parts))
    return StatusEvent(seq=seq, id=task_id, status=status)


def _final_events(
    seq: Iterator[int],
    task_id: str,
    result: mcp_types.CallToolResult | None,
    failure: str | None,
    *,
    canceled: bool,
) -> Iterator[StreamItem]:
    if result is None:
        state = TaskState.CANCELED if canceled or failure is None else TaskState.FAILED
        message = Message.agent(failure) if failure else None
        yield StatusEvent(seq=next(seq), id=task_id, status=A2ATaskStatus(state=state, message=message), final=True)
        return
    parts = _parts(result)
    cost = _cost(result)
    if result.is_error:
        text = parts_text(parts) or "the tool reported an error"
        status = A2ATaskStatus(state=TaskState.FAILED, message=Message.agent(text))
        yield StatusEvent(seq=next(seq), id=task_id, status=status, final=True, cost_usd=cost)
        return
    if parts:
        yield ArtifactEvent(seq=next(seq), id=task_id, artifact=Artifact(parts=parts, index=0))
    status = A2ATaskStatus(state=TaskState.COMPLETED)
    yield StatusEvent(seq=next(seq), id=task_id, status=status, final=True, cost_usd=cost)


def _parts(result: mcp_types.CallToolResult) -> list[Part]:
    parts: list[Part] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(TextPart(text=block.text))
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            parts.append(FilePart(file=FileContent(mime_type=block.mime_type, bytes=block.data)))
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, mcp_types.TextResourceContents):
                parts.append(TextPart(text=resource.text, metadata={"uri": str(resource.uri)}))
            else:
                file = FileContent(mime_type=resource.mime_type, bytes=resource.blob)
                parts.append(FilePart(file=file, metadata={"uri": str(resource.uri)}))
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(FilePart(file=FileContent(name=block.name, uri=str(block.uri), mime_type=block.mime_type)))
    if isinstance(result.structured_content, dict):
        parts.append(DataPart(data=result.structured_content))
    return parts


def _cost(result: mcp_types.CallToolResult) -> float | None:
    cost = (result.meta or {}).get("cost_usd")
    return float(cost) if isinstance(cost, int | float) else None


def _fold_task(task_id: str, params: TaskSendParams, events: list[StreamItem]) -> Task:
    """The Task a sync caller sees: the artifacts and the final status of the call's events."""
    artifacts = [event.artifact for event in events if isinstance(event, ArtifactEvent)]
    final = next(event for event in reversed(events) if isinstance(event, StatusEvent) and event.final)
    metadata: dict[str, Any] = {"cost_usd": final.cost_usd} if final.cost_usd is not None else {}
    return Task(id=task_id, session_id=params.session_id, status=final.status, artifacts=artifacts, metadata=metadata)


def _mcp_error(exc: MCPError, uri: str) -> AgentToolError:
    if exc.code == CONNECTION_CLOSED:
        return PeerConnectionError(f"the MCP server of {uri} closed the connection: {exc.message}")
    return PeerProtocolError(f"the MCP server of {uri} answered error {exc.code}: {exc.message}", reason="bad_answer")


def _new_task_id() -> str:
    return "mcp_" + uuid.uuid4().hex[:16]
