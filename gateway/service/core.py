"""The gateway service's working parts, without HTTP: the stores, the swarm, the agent tools, the runs.

``GatewayService`` is what every route acts on. ``async with service:`` enters the
Gateway (pooled HTTP client, local agents), connects the remote agents it was given
(``members``, members.py), makes the one Runner, and owns the task group in which runs
started over HTTP live (``runs``, runs.py), so a run goes on when the client that started
it disconnects (it can be read again from the event log). Leaving the block cancels runs
still going (they end ``run_failed``) and closes every part: the Gateway, the session
store, the event log and whatever ``closers`` were given.

While it runs, the stores' own background work is held too (``running()``: a store
shared by replicas renews its leases and hands the runs of replicas that died to this
service's ``takeover``, which carries them on; takeover.py), and
what the API registered on any replica, or before a restart, is applied from the
registry store whenever its version moved (``sync_registrations``, before each request).

Sessions and runs belong to the caller that started them (a ``Principal``; see
agent_server/http/auth.py): methods that take a ``caller`` answer another caller that is not
an admin as if the session or run did not exist.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskStatus

from agent_server.http.auth import Principal
from agent_server.stores import StoreUnavailable
from gateway import defaults
from gateway.blackboard import Blackboard
from gateway.calls.coordinator import Gateway
from gateway.calls.result import AgentToolResult
from gateway.calls.tool import AgentTool, AgentToolFunction, ToolInput
from gateway.config.model import ToolConfig
from gateway.errors import AgentToolError, RunClosedError, SessionBusy, SessionConflictError, SessionNotFound
from gateway.event_log import EventLog, MemoryEventLog
from gateway.event_log.cancels import CancelAsk, CancelCause, CancelRequest
from gateway.event_log.shared_read import SharedRead
from gateway.limits.quotas import Quotas
from gateway.models import Providers
from gateway.recording.events import EventType
from gateway.recording.recorder import RunRecorder, new_run_id
from gateway.recording.spend import charged_to
from gateway.registrations import Registration, RegistryStore
from gateway.service.errors import Conflict, NotFound, ServiceError, ShuttingDown
from gateway.service.members import Members, RemoteSpec
from gateway.service.runs import SHUTDOWN_REASON, ServiceRuns
from gateway.service.takeover import Takeover
from gateway.swarm import (
    CURRENT,
    Agent,
    Fallback,
    FullHistory,
    HistoryPolicy,
    MemorySessionStore,
    Runner,
    SemanticRouter,
    Session,
    SessionStore,
)
from gateway.swarm.fallback import cancel_reason
from gateway.swarm.member import SwarmMember
from protocol.errors import SwitchboardError

logger = logging.getLogger("gateway.service")

Closer = Callable[[], Coroutine[Any, Any, None]]


@dataclass
class ToolCallOutcome:
    """How a tool call running in the service's task group ended: ``result``, or ``error`` (with its partial)."""

    run_id: str
    done: anyio.Event | None = None
    """Set when the call ends, for a caller that waits for it (None: nobody waits, as for a streamed call)."""
    result: AgentToolResult | None = None
    error: AgentToolError | None = None


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
        max_handoffs_per_turn: int = defaults.MAX_HANDOFFS_PER_TURN,
        max_tool_iterations: int = defaults.MAX_TOOL_ITERATIONS,
        history_policy: HistoryPolicy | None = None,
        name: str = "switchboard",
        description: str | None = None,
        closers: Sequence[Closer] = (),
        startup_wait_s: float = 0.0,
        resolve_uris: bool = True,
        blackboard: Blackboard | None = None,
        fallback: Fallback = CURRENT,
        router: SemanticRouter | None = None,
        providers: Providers | None = None,
        registry: RegistryStore | None = None,
        quotas: Quotas | None = None,
    ) -> None:
        """``starting_agent`` answers first; or name it with ``starting_agent_name`` when it is one of ``remotes``.

        Every part given (Gateway, stores, ``closers``) is closed by the service when it stops;
        a Gateway given must not be entered yet. ``startup_wait_s``: how long to keep trying
        remote agents that do not answer yet at start (services start in any order).
        ``resolve_uris`` is the Runner's: false, a transfer a remote agent asks for must name
        an agent registered by name (its target is never taken as a URI); so are ``fallback``,
        ``router`` and ``providers``. ``blackboard``: the boards of ``/boards`` and of the
        agents' blackboard tools (default: in memory); the service closes it. ``registry``: where
        what the API registers is kept (default: in memory, this process only). ``quotas``: the
        limits per token (gateway/limits/; default none): a caller over its spend cap starts no
        turn or tool call, and what its runs spend is charged to it.
        """
        if starting_agent is None and starting_agent_name is None:
            starting_agent = Agent(defaults.STARTING_AGENT_NAME, defaults.STARTING_AGENT_INSTRUCTIONS)
        if gateway is not None and event_log is not None and gateway.event_log is not event_log:
            raise ValueError(
                "give the event log to the Gateway (Gateway(event_log=...)), so tool calls and runs share it"
            )
        self.event_log = event_log or (gateway.event_log if gateway is not None else MemoryEventLog())
        self.gateway = gateway or Gateway(event_log=self.event_log)
        self.session_store = session_store or MemorySessionStore()
        self.blackboard = blackboard or Blackboard()
        self.name = name
        self.description = description
        self.members = Members(
            self.gateway,
            starting_agent,
            starting_agent_name=starting_agent_name or "",
            agents=agents,
            remotes=remotes,
            startup_wait_s=startup_wait_s,
            registry=registry,
        )
        self.registry = self.members.registry
        self.runs = ServiceRuns()
        self.quotas = quotas or Quotas()
        self.takeover = Takeover(self.runs, self.members, self.gateway, self.event_log)
        self._runner_options: dict[str, Any] = {
            "max_handoffs_per_turn": max_handoffs_per_turn,
            "max_tool_iterations": max_tool_iterations,
            "history_policy": history_policy or FullHistory(),
            "resolve_uris": resolve_uris,
            "fallback": fallback,
            "router": router,
            "providers": providers,
        }
        self._closers = list(closers)
        self._upkeep = AsyncExitStack()
        self._registry_version: int | None = None
        self._registry_lock = anyio.Lock()
        self._registry_version_now = SharedRead(self.registry.version)
        self._applied_tools: dict[str, dict[str, Any]] = {}

    # -- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> GatewayService:
        await self.gateway.__aenter__()
        try:
            await self._upkeep.enter_async_context(self.session_store.running())
            await self._upkeep.enter_async_context(self.event_log.running(self.takeover.adopt, self._take_cancel))
            await self.members.start(self._make_runner)
            await self.sync_registrations()
            await self.runs.__aenter__()
            await self.takeover.adopt_abandoned()
        except BaseException:
            try:
                await self._upkeep.aclose()
            finally:
                await self._close_parts()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            await self.runs.__aexit__(None, None, None)
            await self._upkeep.aclose()
        finally:
            await self._close_parts()

    async def stop_runs(self) -> None:
        """Cancel the runs still going and wait for them to end ``run_failed``; new ones are refused (503)."""
        await self.runs.stop()

    def _make_runner(self, starting_agent: SwarmMember) -> Runner:
        return Runner(
            starting_agent,
            session_store=self.session_store,
            event_log=self.event_log,
            gateway=self.gateway,
            **self._runner_options,
        )

    async def _close_parts(self) -> None:
        """The Gateway first, outside any new cancel scope (its task group must exit in its own)."""
        await _quietly(self.gateway.aclose)
        with anyio.CancelScope(shield=True):
            if self.members.started:
                await _quietly(self.runner.providers.aclose)
            await _quietly(self.session_store.close)
            await _quietly(self.event_log.aclose)
            await _quietly(self.blackboard.close)
            await _quietly(self.registry.close)
            for closer in self._closers:
                await _quietly(closer)

    # -- the swarm ----------------------------------------------------------------------------

    @property
    def runner(self) -> Runner:
        return self.members.runner

    @property
    def starting_agent(self) -> SwarmMember:
        return self.members.starting_agent

    # -- agent tools --------------------------------------------------------------------------

    async def add_tool(
        self, spec: ToolConfig, attach_to: Sequence[str] | None = None, token: str | None = None
    ) -> AgentTool:
        """Define an agent tool; ``attach_to`` names local agents whose model may call it; ``token`` its credential.

        ``attach_to`` None: the starting agent, when it is local (none otherwise). Recorded in
        the registry store first, so every replica has it, also after a restart.
        """
        if spec.name in self.gateway.tools:
            raise Conflict(f"an agent tool named {spec.name!r} already exists; delete it first")
        if attach_to is None:
            attach_to = [self.starting_agent.name] if isinstance(self.starting_agent, Agent) else []
        for name in attach_to:
            self.members.local_agent(name, "attach_to")
        try:
            spec.agent_tool(token)
        except ValueError as exc:
            raise ServiceError(str(exc)) from None
        entry = {"config": spec.model_dump(mode="json"), "attach_to": list(attach_to), "token": token}
        if not await self.registry.register("tool", spec.name, entry):
            raise Conflict(
                f"an agent tool named {spec.name!r} was defined meanwhile (through another gateway replica); "
                "delete it first"
            )
        return self._add_tool(spec.name, entry)

    async def remove_tool(self, name: str) -> AgentTool:
        """Remove an agent tool, recorded in the registry store first (every replica removes it)."""
        self.get_tool(name)
        await self.registry.unregister("tool", name)
        return self._remove_tool(name)

    async def sync_registrations(self) -> None:
        """Apply what the API registered or removed on any replica (or before a restart), when anything changed.

        The version is read after the call began, in one read shared by the requests that arrive
        together (gateway/event_log/shared_read.py).
        """
        if await self._registry_version_now() == self._registry_version:
            return
        async with self._registry_lock:
            version = await self._registry_version_now()
            if version == self._registry_version:
                return
            for entry in await self.registry.entries():
                if entry.kind == "agent":
                    self.members.apply(entry)
                else:
                    self._apply_tool(entry)
            self._registry_version = version

    def _apply_tool(self, entry: Registration) -> None:
        """A tool defined or removed elsewhere; it replaces one of its name (a configured one removed, defined anew)."""
        name, data = entry.name, entry.data
        if data is None:
            if name in self.gateway.tools:
                self._remove_tool(name)
            return
        if self._applied_tools.get(name) == data:
            return
        if name in self.gateway.tools:
            self._remove_tool(name)
        self._add_tool(name, data)

    def _add_tool(self, name: str, entry: dict[str, Any]) -> AgentTool:
        spec = ToolConfig.model_validate(entry["config"])
        function = self.gateway.add_tool(spec.agent_tool(entry.get("token")))
        local = self.members.local_agents()
        for target in entry.get("attach_to") or []:
            if target in local:
                local[target].add_tool(function)
        self._applied_tools[name] = entry
        return function.tool

    def _remove_tool(self, name: str) -> AgentTool:
        tool = self.get_tool(name)
        del self.gateway.tools[name]
        self._applied_tools.pop(name, None)
        for agent in self.members.local_agents().values():
            agent.tools = [t for t in agent.tools if not _calls(t, tool)]
        return tool

    def get_tool(self, name: str) -> AgentTool:
        tool = self.gateway.tools.get(name)
        if tool is None:
            raise NotFound(f"no agent tool named {name!r} (tools: {', '.join(sorted(self.gateway.tools)) or 'none'})")
        return tool

    def tool_users(self, tool: AgentTool) -> list[str]:
        return [
            agent.name for agent in self.members.local_agents().values() if any(_calls(t, tool) for t in agent.tools)
        ]

    async def call_tool(self, name: str, input: ToolInput, caller: Principal | None = None) -> ToolCallOutcome:
        """Call a tool and wait until it ends. It runs in the service like a streamed call, so shutdown ends it too."""
        outcome = await self.start_tool_call(name, input, caller, waited=True)
        assert outcome.done is not None
        await outcome.done.wait()
        return outcome

    async def start_tool_call(
        self, name: str, input: ToolInput, caller: Principal | None = None, *, waited: bool = False
    ) -> ToolCallOutcome:
        """Start a tool call in the background (a dropped client does not stop it); ``waited``: with ``done``.

        Its run belongs to ``caller``.
        """
        tool = self.get_tool(name)
        tasks = self.runs.task_group()
        owner = caller.name if caller is not None else None
        await self.quotas.check_spend(owner)
        outcome = ToolCallOutcome(new_run_id(), anyio.Event() if waited else None)
        await self.event_log.open_run(outcome.run_id, owner=owner)
        self.runs.active.add(outcome.run_id)
        with charged_to(self.quotas.meter(owner)):  # the task takes the context as it is now
            tasks.start_soon(self._background_call, tool, input, outcome)
        return outcome

    async def _background_call(self, tool: AgentTool, input: ToolInput, outcome: ToolCallOutcome) -> None:
        with self.runs.cancellable(outcome.run_id):
            try:
                outcome.result = await self.gateway.call_tool(tool.name, input, run_id=outcome.run_id)
            except AgentToolError as exc:
                outcome.error = exc
                logger.info("agent tool %s failed (%s): %s", tool.name, exc.reason, exc.message)
            except StoreUnavailable as exc:  # the event log's store went away: the call could not be recorded
                outcome.error = AgentToolError(f"the call could not be recorded: {exc}", reason="store_unavailable")
                logger.warning("agent tool %s failed: %s", tool.name, exc)
            except anyio.get_cancelled_exc_class() as exc:
                reason = cancel_reason(exc) or SHUTDOWN_REASON
                outcome.error = AgentToolError(f"the call was cancelled: {reason}", reason="cancelled")
                raise
            except Exception as exc:
                outcome.error = AgentToolError(f"the call broke: {type(exc).__name__}: {exc}", reason="error")
                logger.exception("agent tool %s broke", tool.name)
            finally:
                await self._finish_run(outcome.run_id)
                if outcome.done is not None:
                    outcome.done.set()

    @asynccontextmanager
    async def owned_run(self, caller: Principal | None) -> AsyncIterator[str]:
        """A new run of ``caller``'s for the block (its id), closed when the block ends, however it ends."""
        owner = caller.name if caller is not None else None
        await self.quotas.check_spend(owner)
        run_id = new_run_id()
        await self.event_log.open_run(run_id, owner=owner)
        self.runs.active.add(run_id)
        try:
            with charged_to(self.quotas.meter(owner)):
                yield run_id
        finally:
            await self._finish_run(run_id)

    async def _finish_run(self, run_id: str) -> None:
        """Close the run; never raises, since it ends a task of the service's group, which a raise would end whole."""
        with anyio.CancelScope(shield=True):
            try:
                await self.event_log.close_run(run_id)
            except StoreUnavailable as exc:  # the log closes such a run itself once its store answers again
                logger.warning("run %s could not be closed now: %s", run_id, exc)
            finally:
                self.runs.active.discard(run_id)

    # -- conversations ------------------------------------------------------------------------

    async def start_turn(
        self,
        session_id: str,
        message: str,
        context_variables: Mapping[str, Any] | None = None,
        caller: Principal | None = None,
    ) -> str:
        """Start one user turn in the background; returns its run id as soon as ``run_started`` is written.

        Errors before the run starts are raised here: a caller over its spend cap (429), another
        caller's session (404), a session another process changed meanwhile or held too long
        (409), a broken session store.
        """
        runner = self.runner
        owner = caller.name if caller is not None else None
        await self.quotas.check_spend(owner)
        try:
            with charged_to(self.quotas.meter(owner)):  # the turn's task takes the context as it is now
                run_id: str = await self.runs.task_group().start(
                    self._turn, runner, session_id, message, dict(context_variables or {}), caller
                )
        except SessionNotFound as exc:
            raise NotFound(str(exc)) from None
        except SessionConflictError as exc:
            raise Conflict(f"{exc}; send the message again") from None
        except SessionBusy as exc:
            raise Conflict(str(exc)) from None
        return run_id

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
        run = self.runs.cancellable()
        with run:
            try:
                turn = runner.run_stream(session_id, message, context_variables, caller=caller)
                async with aclosing(turn) as events:
                    async for event in events:
                        if not started:
                            started.append(event.run_id)
                            self.runs.active.add(event.run_id)
                            run.name(event.run_id)
                            task_status.started(event.run_id)
            except SwitchboardError as exc:  # a failure the project names (a model's refusal, a tool, the swarm)
                if not started:
                    raise
                logger.info("run %s of session %s failed: %s", started[0], session_id, exc)
            except Exception:
                if not started:
                    raise
                logger.warning("run %s of session %s failed", started[0], session_id, exc_info=True)
            finally:
                self.runs.active.difference_update(started)
        if not started:
            # stop_runs cancelled the run before its first event (it was queued behind another turn)
            raise ShuttingDown(f"{SHUTDOWN_REASON}; try again when it is back")

    async def cancel_run(
        self, run_id: str, caller: Principal | None = None, *, cause: CancelCause = "api"
    ) -> CancelAsk | None:
        """End a run ``caller`` may see: ``run_cancelled`` says who asked, then the run ends as cancelled runs do.

        Every agent call in flight in it is sent its cancel (the call engine does, as its caller is
        cancelled). A run another replica writes is cancelled there: the request is left in the
        shared event log (``CancelAsk.STORED``, returned) for that replica, which carries it out
        within a moment. None: cancelled here. NotFound for an unknown run or another caller's;
        Conflict for a run that already ended.
        """
        if not await self.run_known(run_id, caller):
            raise NotFound(f"no run {run_id!r} in the event log (GET /runs lists them)")
        by = caller.name if caller is not None else None
        reason = f"asked by {by}" if by else "asked through the API"
        if cause == "disconnect":
            reason += " (the client disconnected)"
        request = CancelRequest(by, reason, cause)
        if self.runs.holds(run_id):
            await self._cancel_here(run_id, request)
            return None
        if await self.event_log.is_closed(run_id):
            raise Conflict(f"run {run_id!r} already ended; there is nothing to cancel")
        asked = await self.event_log.request_cancel(run_id, request)
        if asked is CancelAsk.ENDED:
            raise Conflict(f"run {run_id!r} already ended; there is nothing to cancel")
        if asked is CancelAsk.UNSHARED:
            raise Conflict(f"run {run_id!r} is starting or ending in this gateway; send the cancel again")
        return asked

    async def _cancel_here(self, run_id: str, request: CancelRequest) -> None:
        """``run_cancelled`` appended by this process, which writes the run, then the run's cancel scope cancelled."""
        await RunRecorder(self.event_log, run_id).emit(
            EventType.RUN_CANCELLED, by=request.by, reason=request.reason, cause=request.cause
        )
        if not await self.runs.cancel(run_id, request.reason):
            raise Conflict(f"run {run_id!r} ended as the cancel arrived; there is nothing to cancel")

    async def _take_cancel(self, run_id: str, request: CancelRequest) -> bool:
        """A cancel another replica left for a run this one writes: carried out, or False while the run is not
        cancellable here yet (it is starting, or being taken over) and still open, so the log keeps the request."""
        if not self.runs.holds(run_id):
            return await self.event_log.is_closed(run_id)
        try:
            await self._cancel_here(run_id, request)
        except (Conflict, RunClosedError) as exc:  # it ended meanwhile: nothing left to cancel
            logger.info("run %s ended before the cancel asked on another replica: %s", run_id, exc)
        return True

    async def run_known(self, run_id: str, caller: Principal | None = None) -> bool:
        """A run the log has events for, or one this service started and has not written yet; ``caller`` may see it."""
        if caller is not None and not caller.may_see(await self.event_log.run_owner(run_id)):
            return False
        return run_id in self.runs.active or await self.event_log.has_run(run_id)

    async def list_runs(self, limit: int, caller: Principal | None = None) -> list[str]:
        """Newest first: every run for an admin (or no caller), else the caller's own."""
        owner = None if caller is None or caller.is_admin else caller.name
        return await self.event_log.list_runs(limit, owner=owner)

    async def run_state(self, run_id: str) -> str:
        """``running`` while this service or another replica runs it (open in the log), else ``interrupted``.

        A turn's mark stays on its session only while the turn goes on, or when it never ended.
        """
        running = run_id in self.runs.active or not await self.event_log.is_closed(run_id)
        return "running" if running else "interrupted"

    async def session(self, session_id: str, caller: Principal | None = None) -> Session:
        """A stored session ``caller`` may see; NotFound for an unknown one or another caller's."""
        session = await self.session_store.load(session_id)
        if session.version == 0 or (caller is not None and not caller.may_see(session.owner)):
            raise NotFound(
                f"no session {session_id!r} yet; post a message to /sessions/{session_id}/messages to start it"
            )
        return session


def _calls(function: object, tool: AgentTool) -> bool:
    """Whether an entry of an agent's tools calls the agent tool ``tool``."""
    return isinstance(function, AgentToolFunction) and function.tool is tool


async def _quietly(close: Closer) -> None:
    try:
        await close()
    except Exception:
        logger.exception("closing %r failed", close)
