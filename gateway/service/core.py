"""The gateway service's working parts, without HTTP: the swarm, the agent tools, the stores, the runs.

``GatewayService`` is what every route acts on. ``async with service:`` enters the
Gateway (pooled HTTP client, local agents), connects the remote agents it was given,
and owns a task group in which runs started over HTTP live, so a run goes on when the
client that started it disconnects (it can be read again from the event log). Leaving
the block cancels runs still going (they end ``run_failed``) and closes every part:
the Gateway, the session store, the event log and whatever ``closers`` were given.

Agents change at run time (``register_remote``, ``remove_agent``): each change builds a
new Runner over the same stores; a run already going keeps the Runner it started with.
A removed agent stays forgotten by every later Runner (a session it held goes back to the
starting agent) until an agent is registered under its name again.

Sessions and runs belong to the caller that started them (a ``Principal``; see
agent_server/auth.py): methods that take a ``caller`` answer another caller that is not
an admin as if the session or run did not exist. What the HTTP API may point the gateway
at is checked by ``check_api_target``: never a command to spawn, only allowed hosts.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import aclosing, contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from agent_server.auth import Principal
from protocol import ErrorCode, ProtocolError

from ..agent_result import AgentToolResult
from .. import defaults
from ..agent_tool import AgentTool, AgentToolFunction, ToolInput
from ..config import ToolConfig, check_agent_url
from ..errors import AgentToolError, InvalidAgentURI, PeerHTTPError
from ..event_log import EventLog, MemoryEventLog
from ..gateway import Gateway
from ..recorder import new_run_id
from ..swarm import (
    Agent,
    FullHistory,
    HistoryPolicy,
    MemorySessionStore,
    RemoteAgent,
    Runner,
    Session,
    SessionConflictError,
    SessionNotFound,
    SessionStore,
    SwarmError,
)
from ..swarm.member import SwarmMember
from ..swarm.registry import AgentRegistry
from ..uri import MCPStdioTarget, parse_agent_uri

logger = logging.getLogger("gateway.service")

Closer = Callable[[], Awaitable[None]]
Stopper = Callable[[], Awaitable[None]]

SHUTDOWN_REASON = "the gateway is shutting down"
STARTUP_RETRY_PAUSE_S = 0.5
STOP_RUNS_TIMEOUT_S = 5.0
AGENT_NAME_MAX_CHARS = 128


def agent_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an agent of the API (it is a path segment of ``/agents/{name}``), or None."""
    if not name or len(name) > AGENT_NAME_MAX_CHARS:
        return f"must be 1-{AGENT_NAME_MAX_CHARS} characters"
    if name != name.strip() or "/" in name:
        return "may not contain '/' or start or end with spaces"
    return None


class ApiErrorCode(enum.IntEnum):
    """The service's own error codes, next to the A2A ones of protocol.ErrorCode (same JSON-RPC server range)."""

    NOT_FOUND = -32010
    CONFLICT = -32011
    AGENT_UNREACHABLE = -32012
    AGENT_TOOL_FAILED = -32013
    RUN_FAILED = -32014
    SHUTTING_DOWN = -32015
    FORBIDDEN = -32016


class ServiceError(ProtocolError):
    """A request the service refuses; subclasses fix the HTTP ``status`` and the error ``code``."""

    status = 400
    error_code: int = ErrorCode.INVALID_PARAMS

    def __init__(self, message: str, *, data: Any = None) -> None:
        super().__init__(self.error_code, message, data=data, http_status=self.status)


class Forbidden(ServiceError):
    status = 403
    error_code = ApiErrorCode.FORBIDDEN


class NotFound(ServiceError):
    status = 404
    error_code = ApiErrorCode.NOT_FOUND


class Conflict(ServiceError):
    status = 409
    error_code = ApiErrorCode.CONFLICT


class AgentUnreachable(ServiceError):
    status = 502
    error_code = ApiErrorCode.AGENT_UNREACHABLE

    @property
    def may_heal(self) -> bool:
        """Nothing answered yet (or a proxy said 5xx): a service still starting; a 404 or a bad card will not heal."""
        data = self.data or {}
        return data.get("reason") in ("connection_error", "timeout") or data.get("status", 0) >= 500


class ShuttingDown(ServiceError):
    status = 503
    error_code = ApiErrorCode.SHUTTING_DOWN


@dataclass
class ToolCallOutcome:
    """How a tool call running in the service's task group ended: ``result``, or ``error`` (with its partial)."""

    run_id: str
    done: anyio.Event = field(default_factory=anyio.Event)
    result: AgentToolResult | None = None
    error: AgentToolError | None = None


@dataclass(frozen=True)
class RemoteSpec:
    """A remote agent to connect when the service starts (its card is fetched then); ``token`` its credential."""

    url: str
    name: str | None = None
    description: str | None = None
    handoff_from: tuple[str, ...] = ()
    token: str | None = field(default=None, repr=False)


class GatewayService:
    def __init__(
        self,
        starting_agent: SwarmMember | None = None,
        *,
        agents: Sequence[SwarmMember] = (),
        remotes: Sequence[RemoteSpec] = (),
        starting_agent_name: str | None = None,
        gateway: Gateway | None = None,
        session_store: SessionStore | None = None,
        event_log: EventLog | None = None,
        max_handoffs_per_turn: int = 5,
        max_tool_iterations: int = 10,
        history_policy: HistoryPolicy | None = None,
        name: str = "switchboard",
        description: str | None = None,
        closers: Sequence[Closer] = (),
        startup_wait_s: float = 0.0,
        resolve_uris: bool = True,
    ) -> None:
        """``starting_agent`` answers first; or name it with ``starting_agent_name`` when it is one of ``remotes``.

        Every part given (Gateway, stores, ``closers``) is closed by the service when it stops;
        a Gateway given must not be entered yet. ``startup_wait_s``: how long to keep trying
        remote agents that do not answer yet at start (services start in any order).
        ``resolve_uris`` is the Runner's: false, a transfer a remote agent asks for must name
        an agent registered by name (its target is never taken as a URI).
        """
        if starting_agent is None and starting_agent_name is None:
            starting_agent = Agent(defaults.STARTING_AGENT_NAME, defaults.STARTING_AGENT_INSTRUCTIONS)
        if gateway is not None and event_log is not None and gateway.event_log is not event_log:
            raise ValueError("give the event log to the Gateway (Gateway(event_log=...)), so tool calls and runs share it")
        self.event_log = event_log or (gateway.event_log if gateway is not None else MemoryEventLog())
        self.gateway = gateway or Gateway(event_log=self.event_log)
        self.session_store = session_store or MemorySessionStore()
        self.max_handoffs_per_turn = max_handoffs_per_turn
        self.max_tool_iterations = max_tool_iterations
        self.history_policy = history_policy or FullHistory()
        self.resolve_uris = resolve_uris
        self.name = name
        self.description = description
        self._starting: SwarmMember | None = starting_agent
        self._starting_name = starting_agent.name if starting_agent is not None else starting_agent_name
        self._extra: list[SwarmMember] = list(agents)
        self._pending = list(remotes)
        self._remotes: dict[str, RemoteAgent] = {}
        self._closers = list(closers)
        self._startup_wait_s = startup_wait_s
        self._forgotten: set[str] = set()
        self._stopping = False
        self._run_stops: dict[object, Stopper] = {}
        self._runs_ended: anyio.Event | None = None
        self._tasks: TaskGroup | None = None
        self._active_runs: set[str] = set()
        self._runner: Runner | None = None

    # -- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> GatewayService:
        await self.gateway.__aenter__()
        try:
            for run_id in await self.event_log.close_abandoned_runs():
                logger.warning("run %s was left open by a process that stopped; closed it as run_failed", run_id)
            deadline = anyio.current_time() + self._startup_wait_s
            for spec in self._pending:
                await self._connect_at_start(spec, deadline)
            self._pending = []
            if self._starting is None:
                self._starting = self._member(self._starting_name or "")
            self._rebuild()
            self._tasks = anyio.create_task_group()
            await self._tasks.__aenter__()
        except BaseException:
            await self._close_parts()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        tasks, self._tasks = self._tasks, None
        try:
            if tasks is not None:
                tasks.cancel_scope.cancel(SHUTDOWN_REASON)
                await tasks.__aexit__(None, None, None)
        finally:
            await self._close_parts()

    async def stop_runs(self) -> None:
        """Cancel the runs still going and wait for them to end ``run_failed``; new ones are refused (503).

        A server calls this before it waits for its connections to close, so the NDJSON
        streams following those runs end with their last event instead of being cut.
        """
        self._stopping = True
        if not self._run_stops:
            return
        self._runs_ended = anyio.Event()
        with anyio.move_on_after(STOP_RUNS_TIMEOUT_S):
            async with anyio.create_task_group() as group:
                for stop in list(self._run_stops.values()):
                    group.start_soon(self._quietly, stop)
                await self._runs_ended.wait()

    @property
    def stopping(self) -> bool:
        return self._stopping

    @contextmanager
    def stoppable_run(self, stop: Stopper) -> Iterator[None]:
        """A run the service did not start itself (a task of its A2A binding) that ``stop_runs`` ends by calling ``stop``.

        Refused with ShuttingDown (503) once the service is stopping.
        """
        if self._stopping:
            raise ShuttingDown(f"{SHUTDOWN_REASON}; try again when it is back")
        with self._registered(stop):
            yield

    @contextmanager
    def _cancellable_run(self) -> Iterator[anyio.CancelScope]:
        """A run's own cancel scope: stop_runs ends runs without cancelling the task group's host (the lifespan).

        A run that begins after stop_runs (it was queued behind another) is cancelled at once.
        """
        with anyio.CancelScope() as scope:

            async def stop() -> None:
                scope.cancel(SHUTDOWN_REASON)

            if self._stopping:
                scope.cancel(SHUTDOWN_REASON)
            with self._registered(stop):
                yield scope

    @contextmanager
    def _registered(self, stop: Stopper) -> Iterator[None]:
        token = object()
        self._run_stops[token] = stop
        try:
            yield
        finally:
            del self._run_stops[token]
            if not self._run_stops and self._runs_ended is not None:
                self._runs_ended.set()

    async def _close_parts(self) -> None:
        """The Gateway first, outside any new cancel scope (its task group must exit in its own)."""
        await self._quietly(self.gateway.aclose)
        with anyio.CancelScope(shield=True):
            await self._quietly(self.session_store.close)
            await self._quietly(self.event_log.aclose)
            for closer in self._closers:
                await self._quietly(closer)

    @staticmethod
    async def _quietly(close: Closer) -> None:
        try:
            await close()
        except Exception:
            logger.exception("closing %r failed", close)

    # -- the swarm ----------------------------------------------------------------------------

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            raise RuntimeError("the gateway service is not running: use `async with service:` first")
        return self._runner

    @property
    def running(self) -> bool:
        return self._runner is not None

    @property
    def starting_agent_name(self) -> str:
        return self._starting.name if self._starting is not None else self._starting_name or ""

    @property
    def starting_agent(self) -> SwarmMember:
        assert self._starting is not None
        return self._starting

    def agents(self) -> dict[str, SwarmMember]:
        """Every agent a conversation can reach, by name."""
        return self.runner.agents

    def local_agents(self) -> dict[str, Agent]:
        return {name: member for name, member in self.agents().items() if isinstance(member, Agent)}

    def handoff_sources(self, name: str) -> list[str]:
        """The local agents that can transfer to ``name``."""
        return [agent.name for agent in self.local_agents().values() if any(h.name == name for h in agent.handoffs)]

    def check_api_target(self, uri: str, field: str) -> None:
        """What the HTTP API may point the gateway at: nothing that spawns a process, and only allowed hosts.

        Commands (``mcp+stdio:``) come only from the operator: the configuration file or the
        Python API. With an explicit ``allowed_agent_hosts``, the API may add agents on those
        hosts only. ``field`` names the body field in the refusal.
        """
        try:
            target = parse_agent_uri(uri)
        except InvalidAgentURI:
            return  # the body's own validation reports it
        if isinstance(target, MCPStdioTarget):
            raise Forbidden(
                f"{field}: {uri!r} would start a process on the gateway's host; commands (mcp+stdio:) are "
                "defined only by the operator: in the configuration file ([[tools]] agent = ...) or the Python API",
                data={"field": field},
            )
        if self.gateway.allowed_hosts.explicit and not self.gateway.allowed_hosts.allows(uri):
            raise Forbidden(
                f"{field}: {uri!r} is not on an allowed agent host ([security] allowed_agent_hosts: "
                f"{', '.join(self.gateway.allowed_hosts.patterns) or 'none'})",
                data={"field": field},
            )

    async def register_remote(
        self,
        url: str,
        *,
        name: str | None = None,
        description: str | None = None,
        handoff_from: Sequence[str] | None = None,
        token: str | None = None,
    ) -> RemoteAgent:
        """Fetch the card at ``url`` and add the agent; by default the starting agent may transfer to it.

        ``token`` is sent to this agent only. Nothing changes unless everything succeeds.
        """
        try:
            check_agent_url(url)
        except ValueError as exc:
            raise ServiceError(str(exc), data={"field": "url"}) from None
        sources = self._default_sources() if handoff_from is None else list(handoff_from)
        self._check_sources(sources)
        if name is not None:
            self._check_free(name)
        remote = await self._connect(RemoteSpec(url, name, description, tuple(sources), token))
        self._rebuild()
        return remote

    def remove_agent(self, name: str) -> RemoteAgent:
        """Forget a remote agent registered by URL; local agents stop offering the transfer to it.

        Sessions it held go back to the starting agent at their next turn: the agent is not
        reconnected by its URI, and stays gone until an agent is registered under its name again.
        """
        remote = self._remotes.get(name)
        if remote is None:
            member = self.agents().get(name)
            if member is not None:
                raise Conflict(
                    f"agent {name!r} {self._how_added(member)}; only remote agents registered by URL "
                    "(POST /agents, or [[agents]] with url in the configuration) can be removed"
                )
            raise NotFound(f"no agent named {name!r} (agents: {', '.join(sorted(self.agents())) or 'none'})")
        if self._starting is remote:
            raise Conflict(f"agent {name!r} is the starting agent; it cannot be removed")
        for agent in self.local_agents().values():
            agent.remove_handoff(name)
        del self._remotes[name]
        self._extra = [member for member in self._extra if member is not remote]
        self._forgotten.add(name)
        self._rebuild()
        return remote

    def _how_added(self, member: SwarmMember) -> str:
        if isinstance(member, Agent):
            return "is a local agent (defined in the configuration or given to the service in code)"
        if isinstance(member, RemoteAgent) and not any(m is member for m in self._extra):
            return f"was reached through its URI {member.uri} (a transfer asked for it), not registered by URL"
        return "was given to the service in code, not registered by URL"

    async def _connect_at_start(self, spec: RemoteSpec, deadline: float) -> RemoteAgent:
        """Connect, trying again until ``deadline`` while nothing answers at the URL (it may be starting too)."""
        attempt = 1
        while True:
            try:
                return await self._connect(spec)
            except AgentUnreachable as exc:
                left = deadline - anyio.current_time()
                if not exc.may_heal or left <= 0:
                    if attempt > 1:
                        exc.message += f" (tried {attempt} times over {self._startup_wait_s:g} s)"
                    raise
                logger.warning(
                    "remote agent %s not reachable yet (attempt %d: %s); trying again for %.1f s more",
                    spec.url,
                    attempt,
                    exc.message,
                    left,
                )
                await anyio.sleep(min(STARTUP_RETRY_PAUSE_S, left))
                attempt += 1

    async def _connect(self, spec: RemoteSpec) -> RemoteAgent:
        try:
            remote = await RemoteAgent.connect(
                spec.url, self.gateway, name=spec.name, description=spec.description, token=spec.token
            )
        except AgentToolError as exc:
            data = {"url": spec.url, "reason": exc.reason, **({"status": exc.status} if isinstance(exc, PeerHTTPError) else {})}
            raise AgentUnreachable(f"cannot fetch the agent card from {spec.url}: {exc.message}", data=data) from None
        if spec.name is None and (problem := agent_name_problem(remote.name)) is not None:
            raise ServiceError(
                f"the agent card at {spec.url} names the agent {remote.name!r}, which cannot be an agent name here "
                f"(it {problem}); register it under another name: pass \"name\" in the body",
                data={"field": "name", "card_name": remote.name},
            )
        self._check_free(remote.name)
        for source in spec.handoff_from:
            self._local_agent(source, "handoff_from").add_handoff(remote)
        self.gateway.trust(spec.url)
        self._remotes[remote.name] = remote
        self._extra.append(remote)
        self._forgotten.discard(remote.name)
        return remote

    def _rebuild(self) -> None:
        runner = Runner(
            self.starting_agent,
            session_store=self.session_store,
            event_log=self.event_log,
            max_handoffs_per_turn=self.max_handoffs_per_turn,
            max_tool_iterations=self.max_tool_iterations,
            history_policy=self.history_policy,
            gateway=self.gateway,
            resolve_uris=self.resolve_uris,
        )
        for member in self._extra:
            runner.register_agent(member)
        for name in self._forgotten:
            runner.forget(name)
        self._runner = runner

    def _member(self, name: str) -> SwarmMember:
        member = self._members().get(name)
        if member is None:
            raise ValueError(f"the starting agent {name!r} is not among the agents given")
        return member

    def _members(self) -> dict[str, SwarmMember]:
        """Every agent known so far, also before the first Runner exists (while connecting at start)."""
        if self._runner is not None:
            return self._runner.agents
        known = [m for m in [self._starting, *self._extra] if m is not None]
        if not known:
            return {}
        registry = AgentRegistry(known[0])
        for member in known[1:]:
            registry.register(member)
        return registry.snapshot()

    def _check_free(self, name: str) -> None:
        if name in self._members():
            raise Conflict(f"an agent named {name!r} is already registered; remove it first or register under another name")

    def _default_sources(self) -> list[str]:
        return [self._starting.name] if isinstance(self._starting, Agent) else []

    def _check_sources(self, sources: Sequence[str]) -> None:
        for source in sources:
            self._local_agent(source, "handoff_from")

    def _local_agent(self, name: str, field: str) -> Agent:
        """The local agent ``name``, or a 400 saying which body ``field`` named something else."""
        members = self._members()
        member = members.get(name)
        if not isinstance(member, Agent):
            local = sorted(n for n, m in members.items() if isinstance(m, Agent))
            raise ServiceError(
                f"{field} names {name!r}, which is not a local agent (local agents: {', '.join(local) or 'none'})",
                data={"field": field},
            )
        return member

    # -- agent tools --------------------------------------------------------------------------

    def add_tool(self, spec: ToolConfig, attach_to: Sequence[str] = (), token: str | None = None) -> AgentTool:
        """Define an agent tool; ``attach_to`` names local agents whose model may call it; ``token`` its credential."""
        if spec.name in self.gateway.tools:
            raise Conflict(f"an agent tool named {spec.name!r} already exists; delete it first")
        targets = [self._local_agent(name, "attach_to") for name in attach_to]
        try:
            function = self.gateway.add_tool(spec.agent_tool(token))
        except ValueError as exc:
            raise ServiceError(str(exc)) from None
        for agent in targets:
            agent.add_tool(function)
        return function.tool

    def remove_tool(self, name: str) -> AgentTool:
        tool = self.get_tool(name)
        del self.gateway.tools[name]
        for agent in self.local_agents().values():
            agent.tools = [t for t in agent.tools if not _calls(t, tool)]
        return tool

    def get_tool(self, name: str) -> AgentTool:
        tool = self.gateway.tools.get(name)
        if tool is None:
            raise NotFound(f"no agent tool named {name!r} (tools: {', '.join(sorted(self.gateway.tools)) or 'none'})")
        return tool

    def tool_users(self, tool: AgentTool) -> list[str]:
        return [agent.name for agent in self.local_agents().values() if any(_calls(t, tool) for t in agent.tools)]

    async def call_tool(self, name: str, input: ToolInput, caller: Principal | None = None) -> ToolCallOutcome:
        """Call a tool and wait until it ends. It runs in the service like a streamed call, so shutdown ends it too."""
        outcome = await self.start_tool_call(name, input, caller)
        await outcome.done.wait()
        return outcome

    async def start_tool_call(self, name: str, input: ToolInput, caller: Principal | None = None) -> ToolCallOutcome:
        """Start a tool call in the background (a dropped client does not stop it); ``done`` is set when it ends.

        Its run belongs to ``caller``.
        """
        tool = self.get_tool(name)
        tasks = self._task_group()
        outcome = ToolCallOutcome(new_run_id())
        await self.event_log.open_run(outcome.run_id, owner=caller.name if caller is not None else None)
        self._active_runs.add(outcome.run_id)
        tasks.start_soon(self._background_call, tool, input, outcome)
        return outcome

    async def _background_call(self, tool: AgentTool, input: ToolInput, outcome: ToolCallOutcome) -> None:
        with self._cancellable_run():
            try:
                outcome.result = await self.gateway.call_tool(tool.name, input, run_id=outcome.run_id)
            except AgentToolError as exc:
                outcome.error = exc
                logger.info("agent tool %s failed (%s): %s", tool.name, exc.reason, exc.message)
            except anyio.get_cancelled_exc_class():
                outcome.error = AgentToolError(f"the call was cancelled: {SHUTDOWN_REASON}", reason="cancelled")
                raise
            except Exception as exc:
                outcome.error = AgentToolError(f"the call broke: {type(exc).__name__}: {exc}", reason="error")
                logger.exception("agent tool %s broke", tool.name)
            finally:
                await self._finish_run(outcome.run_id)
                outcome.done.set()

    async def _finish_run(self, run_id: str) -> None:
        with anyio.CancelScope(shield=True):
            try:
                await self.event_log.close_run(run_id)
            finally:
                self._active_runs.discard(run_id)

    # -- conversations ------------------------------------------------------------------------

    async def start_turn(
        self,
        session_id: str,
        message: str,
        context_variables: Mapping[str, Any] | None = None,
        caller: Principal | None = None,
    ) -> str:
        """Start one user turn in the background; returns its run id as soon as ``run_started`` is written.

        Errors before the run starts are raised here: another caller's session (404), a
        session another process changed meanwhile (409), a broken session store.
        """
        runner = self.runner
        try:
            return await self._task_group().start(
                self._turn, runner, session_id, message, dict(context_variables or {}), caller
            )
        except SessionNotFound as exc:
            raise NotFound(str(exc)) from None
        except SessionConflictError as exc:
            raise Conflict(f"{exc}; send the message again") from None

    async def _turn(
        self,
        runner: Runner,
        session_id: str,
        message: str,
        context_variables: dict[str, Any],
        caller: Principal | None,
        *,
        task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        started: list[str] = []
        with self._cancellable_run():
            try:
                turn = runner.run_stream(session_id, message, context_variables, caller=caller)
                async with aclosing(turn) as events:
                    async for event in events:
                        if not started:
                            started.append(event.run_id)
                            self._active_runs.add(event.run_id)
                            task_status.started(event.run_id)
            except (AgentToolError, SwarmError) as exc:
                if not started:
                    raise
                logger.info("run %s of session %s failed: %s", started[0], session_id, exc)
            except Exception:
                if not started:
                    raise
                logger.warning("run %s of session %s failed", started[0], session_id, exc_info=True)
            finally:
                self._active_runs.difference_update(started)
        if not started:
            # stop_runs cancelled the run before its first event (it was queued behind another turn)
            raise ShuttingDown(f"{SHUTDOWN_REASON}; try again when it is back")

    async def run_known(self, run_id: str, caller: Principal | None = None) -> bool:
        """A run the log has events for, or one this service started and has not written to yet; ``caller`` may see it."""
        if caller is not None and not caller.may_see(await self.event_log.run_owner(run_id)):
            return False
        if run_id in self._active_runs or await self.event_log.is_closed(run_id):
            return True
        return bool(await self.event_log.read(run_id, -1, limit=1))

    async def list_runs(self, limit: int, caller: Principal | None = None) -> list[str]:
        """Newest first: every run for an admin (or no caller), else the caller's own."""
        owner = None if caller is None or caller.is_admin else caller.name
        return await self.event_log.list_runs(limit, owner=owner)

    def run_state(self, run_id: str) -> str:
        """``running`` while this service runs it, else ``interrupted`` (a turn that started and never ended)."""
        return "running" if run_id in self._active_runs else "interrupted"

    async def session(self, session_id: str, caller: Principal | None = None) -> Session:
        """A stored session ``caller`` may see; NotFound for an unknown one or another caller's."""
        session = await self.session_store.load(session_id)
        if session.version == 0 or (caller is not None and not caller.may_see(session.owner)):
            raise NotFound(f"no session {session_id!r} yet; post a message to /sessions/{session_id}/messages to start it")
        return session

    def _task_group(self) -> TaskGroup:
        if self._stopping:
            raise ShuttingDown(f"{SHUTDOWN_REASON}; try again when it is back")
        if self._tasks is None:
            raise RuntimeError("the gateway service is not running: use `async with service:` first")
        return self._tasks


def _calls(function: object, tool: AgentTool) -> bool:
    """Whether an entry of an agent's tools calls the agent tool ``tool``."""
    return isinstance(function, AgentToolFunction) and function.tool is tool
