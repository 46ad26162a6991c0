"""The coordinator's front door for agent-tools: peers by URI, tools, one pooled HTTP client (peers/http_client.py).

``async with Gateway() as gw:`` owns a task group, in which ``local://`` agents (each a
TaskManager with an in-memory store) and MCP connections live; leaving the block stops
them, closes the HTTP client the gateway made, and the event log it made.

The gateway also keeps where it may connect (``allowed_hosts``, see allowed_hosts.py):
the hosts of the tools added here and of the agents the operator ``trust``-ed, unless an
explicit list was given. A peer with a credential (``token``) is its own peer: the token
goes only to that agent.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Unpack

import anyio
from anyio.abc import TaskGroup

from agent_server.http.auth import token_problem
from gateway.calls.engine import AgentCall, CallSpec
from gateway.calls.reattach import Reattach
from gateway.calls.result import AgentToolResult
from gateway.calls.tool import AgentTool, AgentToolFunction, AgentToolOptions, ToolInput, as_message
from gateway.errors import PeerConnectionError, UnknownAgentTool
from gateway.event_log import EventLog, MemoryEventLog
from gateway.peers.allowed_hosts import HostAllowlist
from gateway.peers.base import Peer
from gateway.peers.limits import PeerLimits
from gateway.peers.local import LocalAgentHost, LocalPeer
from gateway.recording.recorder import RunRecorder, current_recorder
from protocol import Message

if TYPE_CHECKING:
    from gateway.peers.http_client import PeerHttpClient
    from gateway.peers.mcp import MCPConnection
from gateway.uri import (
    A2AHttpTarget,
    AgentTarget,
    LocalTarget,
    MCPHttpTarget,
    MCPStdioTarget,
    local_name_problem,
    parse_agent_uri,
)


class Gateway:
    def __init__(
        self,
        event_log: EventLog | None = None,
        *,
        http_client: PeerHttpClient | None = None,
        limits: PeerLimits | None = None,
        allowed_hosts: HostAllowlist | None = None,
    ) -> None:
        """``limits``: deadlines, pool and sizes of calls to agents (defaults in peers/limits.py).

        ``http_client``: the one HTTP client of every HTTP peer (default: one made with ``limits``,
        closed with the gateway; one given is the caller's to close).

        ``allowed_hosts``: where URIs from remote agents' answers may lead; default: learned
        from the tools added and the agents trusted here.
        """
        self.event_log = event_log if event_log is not None else MemoryEventLog()
        self._owns_event_log = event_log is None
        self.limits = limits or PeerLimits()
        self.allowed_hosts = allowed_hosts or HostAllowlist()
        self._owns_client = http_client is None
        if http_client is None:
            from gateway.peers.http_client import (
                PeerHttpClient,  # aiohttp loads with the first Gateway, not with the module
            )

            http_client = PeerHttpClient(self.limits)
        self.http_client = http_client
        self.tools: dict[str, AgentTool] = {}
        self._local: dict[str, LocalAgentHost] = {}
        self._mcp: dict[tuple[object, ...], MCPConnection] = {}
        self._peers: dict[tuple[str, str | None], Peer] = {}
        self._stack: AsyncExitStack | None = None
        self._task_group: TaskGroup | None = None
        self._closed = False

    async def __aenter__(self) -> Gateway:
        if self._stack is not None or self._closed:
            raise RuntimeError("a Gateway can be entered once")
        async with AsyncExitStack() as stack:
            self._task_group = await stack.enter_async_context(anyio.create_task_group())
            for host in self._local.values():
                await self._task_group.start(host.serve)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._shutdown(exc_type, exc, tb)

    async def aclose(self) -> None:
        """Stop local agents and MCP connections, then close what the gateway created (same as leaving the block)."""
        await self._shutdown(None, None, None)

    async def _shutdown(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            with anyio.CancelScope(shield=True):
                for connection in self._mcp.values():
                    await connection.aclose()
                for host in self._local.values():
                    await host.aclose()
                for peer in self._peers.values():
                    await peer.aclose()
        finally:
            stack, self._stack, self._task_group = self._stack, None, None
            try:
                if stack is not None:
                    await _exit_unwrapped(stack, exc_type, exc, tb)
            finally:
                with anyio.CancelScope(shield=True):
                    if self._owns_client:
                        await self.http_client.aclose()
                    if self._owns_event_log:
                        await self.event_log.aclose()

    def register_local_agent(self, name: str, agent: Any) -> str:
        """Serve ``agent`` (a HostedAgent or an async function) in this process as ``local://NAME``."""
        problem = local_name_problem(name)
        if problem is not None:
            raise ValueError(problem)
        if name in self._local:
            raise ValueError(f"a local agent named {name!r} is already registered")
        host = LocalAgentHost(name, agent)
        self._local[name] = host
        if self._task_group is not None:
            self._task_group.start_soon(host.serve)
        return f"local://{name}"

    def add_agent_tool(self, name: str, agent: str, **options: Unpack[AgentToolOptions]) -> AgentToolFunction:
        """Make the agent at URI ``agent`` callable as tool ``name``; bad URIs and options fail here.

        Returns the tool as a local agent's model calls it (``Agent(tools=[...])``).
        """
        return self.add_tool(AgentTool.create(name, agent, **options))

    def add_tool(self, tool: AgentTool) -> AgentToolFunction:
        """Add an agent tool; its host becomes an allowed host (unless the list is explicit)."""
        if tool.name in self.tools:
            raise ValueError(f"an agent tool named {tool.name!r} already exists")
        self.tools[tool.name] = tool
        self.allowed_hosts.learn(tool.agent)
        return self.tool_function(tool.name)

    def tool_function(self, name: str) -> AgentToolFunction:
        """Agent tool ``name`` as a local agent's model calls it."""
        return AgentToolFunction(self.get_tool(name), self.call_tool)

    def trust(self, uri: str) -> None:
        """The operator set up the agent at ``uri``: its host becomes an allowed host (unless the list is explicit)."""
        self.allowed_hosts.learn(uri)

    def get_tool(self, name: str) -> AgentTool:
        tool = self.tools.get(name)
        if tool is None:
            raise UnknownAgentTool(name, list(self.tools))
        return tool

    async def call_tool(
        self, name: str, input: ToolInput, *, run_id: str | None = None, session_id: str | None = None
    ) -> AgentToolResult:
        """Call agent tool ``name``; raises an AgentToolError (with ``.partial``) when it fails.

        Events go to ``run_id`` when given, else to the current run (a swarm run in
        progress), else to a new run of their own that is closed when the call ends.
        """
        tool = self.get_tool(name)
        recorder = RunRecorder(self.event_log, run_id) if run_id is not None else current_recorder()
        owned = recorder is None
        call = self._tool_call(tool, recorder or RunRecorder(self.event_log), as_message(input), session_id)
        try:
            return await call.run()
        finally:
            if owned:
                await call.close_run()

    async def follow_call(self, tool: str, call: Reattach, run_id: str) -> AgentToolResult:
        """Follow again the call of agent tool ``tool`` another process had in flight in ``run_id`` (reattach.py).

        Nothing is sent: the call's task is followed from the last line the log holds, its
        events go on in ``run_id`` under its ``call_id``. Raises like ``call_tool``.
        """
        found = self.get_tool(tool)
        message = as_message(call.invoked.input or "")
        recorder = RunRecorder(self.event_log, run_id)
        return await self._tool_call(found, recorder, message, call.invoked.session_id, call).run()

    def _tool_call(
        self,
        tool: AgentTool,
        recorder: RunRecorder,
        message: Message,
        session_id: str | None,
        reattach: Reattach | None = None,
    ) -> AgentCall:
        connect = partial(self.peer, tool.target, token=tool.token)
        spec = CallSpec.of_tool(tool, self.limits.cancel_timeout_s)
        return AgentCall(connect, recorder, spec, message, session_id=session_id, reattach=reattach)

    def peer(self, agent: str | AgentTarget, *, token: str | None = None) -> Peer:
        """The peer for an agent URI (or its parsed target, as an ``AgentTool`` holds it), made once and reused.

        ``token`` is sent (``Authorization: Bearer``) to that agent only. Raises
        ``InvalidAgentURI`` for a bad URI, ``PeerConnectionError`` for a ``local://`` name
        nothing is registered under, or for a ``local://`` or MCP peer of a gateway not entered.
        """
        if token is not None and (problem := token_problem(token)) is not None:
            raise ValueError(problem)
        uri = agent if isinstance(agent, str) else agent.uri
        peer = self._peers.get((uri, token))
        if peer is None:
            target = parse_agent_uri(agent) if isinstance(agent, str) else agent
            peer = self._peers[(uri, token)] = self._make_peer(target, token)
        return peer

    def _make_peer(self, target: AgentTarget, token: str | None) -> Peer:
        uri = target.uri
        if isinstance(target, A2AHttpTarget):
            from gateway.peers.discovery import HttpAgentPeer

            return HttpAgentPeer(target, self.http_client, self.limits, token=token)
        if isinstance(target, LocalTarget):
            host = self._local.get(target.name)
            if host is None:
                known = ", ".join(sorted(self._local)) or "none"
                raise PeerConnectionError(
                    f"no agent named {target.name!r} is registered in this process (registered: {known})"
                )
            self._require_started(uri)
            return LocalPeer(target, host)
        assert isinstance(target, MCPStdioTarget | MCPHttpTarget)
        from gateway.peers.mcp import MCPConnection, MCPPeer  # the MCP SDK loads with the first MCP target

        task_group = self._require_started(uri)
        key = (*target.server_key, token)
        connection = self._mcp.get(key)
        if connection is None:
            connection = self._mcp[key] = MCPConnection(
                target, task_group, connect_timeout_s=self.limits.connect_timeout_s, token=token
            )
        return MCPPeer(target, connection)

    def _require_started(self, uri: str) -> TaskGroup:
        """The task group local agents and MCP connections run in; a call through a gateway not entered fails."""
        if self._task_group is None:
            state = "is closed" if self._closed else "was not started"
            raise PeerConnectionError(
                f"{uri} runs inside the gateway, which {state}: call it within `async with Gateway() as gateway:`"
            )
        return self._task_group


async def _exit_unwrapped(
    stack: AsyncExitStack, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
) -> None:
    """Leave the task group; the block's own error leaves as itself, not wrapped in an ExceptionGroup.

    ``except BudgetExceeded`` around ``async with Gateway():`` then catches what the block raised.
    """
    try:
        await stack.__aexit__(exc_type, exc, tb)
    except BaseExceptionGroup as group:
        if exc is not None and len(group.exceptions) == 1 and group.exceptions[0] is exc:
            return  # __aexit__ returning normally lets the block's exception propagate as it was
        raise
