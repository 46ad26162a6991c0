"""The swarm runner: one user turn, from the agent holding the conversation through tools and transfers to an answer.

The loop, in the order a reader meets it in ``_turn`` and ``_converse``:

1. Load the session (history, active agent, context variables) under the session's lock,
   append the user message and save it at once with the turn's run id, so a crash
   leaves the message and the mark of an unfinished turn (``open_run``).
   Every local agent's model must resolve (a name through the providers) before then.
2. With a semantic router, the user's words may go straight to the agent whose examples
   they match (router.py), before any model runs.
3. The active agent takes a step: a local Agent calls its model and runs the tools it
   asked for (local.py), a RemoteAgent answers one task over its peer (remote.py). A step
   may ask for one transfer, its target found as the ``TargetPolicy`` allows (admission.py).
4. A transfer takes one path whoever asked (transfer.py): the turn's rules admit or
   refuse it (admission.py), the call that asked gets its answer, then the new agent takes
   the next step. A refused transfer ends transfers for the turn; the current agent is
   told why and answers, unless the runner's fallback takes the conversation (fallback.py).
5. A step that answers ends the turn. The session is saved with compare-and-set; every
   step went to the event log. A turn that fails saves the session as it was when the
   turn started, the mark removed.

A turn whose process stopped mid-run is carried on by the process that takes its run over
(``resume``; what is followed again and what is redone: resume.py), under the same run id.

A turn may run on behalf of a caller (a ``Principal``): a session it did not start is,
to a caller that is not an admin, a session that does not exist (``SessionNotFound``).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing, suppress
from typing import TYPE_CHECKING, Any

import anyio

from agent_server.http.auth import Principal
from gateway import defaults
from gateway.errors import AgentHandoffError, AgentToolError, SessionNotFound
from gateway.event_log import EventLog, MemoryEventLog
from gateway.models.base import ChatModel
from gateway.models.providers import Providers
from gateway.recording.events import Event, EventType, RunStartedEvent
from gateway.recording.recorder import RunRecorder
from gateway.swarm.admission import Targets
from gateway.swarm.agent import Agent
from gateway.swarm.fallback import CURRENT, Fallback, describe_failure, supervisor_name
from gateway.swarm.handoff import Handoff
from gateway.swarm.health import unreachable
from gateway.swarm.history_policy import FullHistory, HistoryPolicy, last_user_text
from gateway.swarm.local import check_models, local_step
from gateway.swarm.member import SwarmMember
from gateway.swarm.registry import AgentRegistry, TargetPolicy
from gateway.swarm.remote import RemoteAgent, connector, remote_step
from gateway.swarm.resume import REATTACHED, REDONE, TurnTakeover
from gateway.swarm.router import SemanticRouter
from gateway.swarm.sessions import MemorySessionStore, Session, SessionStore
from gateway.swarm.transfer import Handover, switch
from gateway.swarm.turn import RunOptions, RunResponse, Step, Transfer, Turn, pending_calls_wire
from gateway.telemetry import spans

if TYPE_CHECKING:
    from gateway.calls.coordinator import Gateway

__all__ = ["Runner"]

_SAVE_AFTER_FAILURE_S = 5.0


class Runner:
    """Runs turns of a swarm conversation; see the module docstring for the loop."""

    def __init__(
        self,
        starting_agent: SwarmMember,
        session_store: SessionStore | None = None,
        event_log: EventLog | None = None,
        *,
        max_handoffs_per_turn: int = defaults.MAX_HANDOFFS_PER_TURN,
        max_tool_iterations: int = defaults.MAX_TOOL_ITERATIONS,
        history_policy: HistoryPolicy | None = None,
        gateway: Gateway | None = None,
        resolve_uris: bool | None = None,
        providers: Providers | None = None,
        fallback: Fallback = CURRENT,
        router: SemanticRouter | None = None,
        dynamic_agents: bool | None = None,
        targets: TargetPolicy | None = None,
    ) -> None:
        """``providers`` resolve agents' model names (default: the environment's OpenAI-compatible one).

        ``fallback`` takes the conversation when the handoff limit or a cycle trips
        (fallback.py); ``router`` routes user messages by example utterances (router.py);
        ``targets`` says how a transfer target nothing registered is found (registry.py
        ``TargetPolicy``; by default URIs are connected to and agent objects adopted), or,
        as before, ``resolve_uris`` (its ``connect_uris``) and ``dynamic_agents`` (its
        ``adopt_agents``).
        """
        if max_handoffs_per_turn < 0 or max_tool_iterations < 0:
            raise ValueError("limits must be >= 0")
        self.starting_agent = starting_agent
        self.session_store = session_store or MemorySessionStore()
        self.event_log = event_log or (gateway.event_log if gateway is not None else MemoryEventLog())
        self.max_handoffs_per_turn = max_handoffs_per_turn
        self.max_tool_iterations = max_tool_iterations
        self.history_policy = history_policy or FullHistory()
        self.gateway = gateway
        self.targets = TargetPolicy.of(targets, resolve_uris=resolve_uris, dynamic_agents=dynamic_agents)
        self.providers = providers or Providers()
        self.fallback = fallback
        self.router = router
        self._registry = AgentRegistry(starting_agent)
        if not isinstance(fallback, str):
            self._registry.register(fallback)
        self._registry.snapshot()

    @property
    def resolve_uris(self) -> bool:
        """Whether a transfer target may be named by URI (``targets.connect_uris``)."""
        return self.targets.connect_uris

    @property
    def agents(self) -> dict[str, SwarmMember]:
        """Every agent a conversation can be handed to, by name."""
        return self._registry.snapshot()

    def register_agent(self, agent: SwarmMember) -> None:
        """Make an agent that no handoff reaches a valid transfer target.

        A name clash raises ``ValueError`` and leaves the runner as it was.
        """
        self._registry.register(agent)

    def forget(self, name: str) -> None:
        """Take the agent ``name`` out of the swarm: registered, or found by URI.

        It no longer resolves as a transfer target (by name or by its URI) and is left out of
        ``agents`` even where a handoff still points at it (remove those handoffs to stop
        offering the transfer). A session it holds goes back to the starting agent on its
        next turn (``agent_changed`` with ``cause: removed``) instead of reconnecting by URI.
        ``register_agent`` with that name undoes it. Unknown names are a no-op; the starting
        agent cannot be forgotten (``ValueError``). Forgetting is per Runner.
        """
        self._registry.forget(name)

    async def register_remote(
        self, uri: str, *, name: str | None = None, description: str | None = None
    ) -> RemoteAgent:
        """Fetch the card of the agent at ``uri`` through the gateway and register it (its host becomes allowed)."""
        if self.gateway is None:
            raise ValueError("register_remote needs Runner(gateway=...) to reach the agent")
        remote = await RemoteAgent.connect(uri, self.gateway, name=name, description=description)
        self.register_agent(remote)
        self.gateway.trust(uri)
        return remote

    def run(
        self,
        session_id: str,
        user_message: str,
        context_variables: dict[str, Any] | None = None,
        *,
        model_override: ChatModel | str | None = None,
        max_turns: int | None = None,
        execute_tools: bool = True,
        debug: bool = False,
    ) -> RunResponse:
        """Blocking form of ``run_async`` (starts its own event loop; not for use inside one).

        The HTTP clients of models made from names are closed before it returns (they open
        again on the next call, in its own event loop).
        """
        options = RunOptions(model_override, max_turns, execute_tools, debug)

        async def turn() -> RunResponse:
            try:
                return await self.run_async(session_id, user_message, context_variables, options=options)
            finally:
                await self.providers.aclose()

        return anyio.run(turn)

    async def run_async(
        self,
        session_id: str,
        user_message: str,
        context_variables: dict[str, Any] | None = None,
        *,
        caller: Principal | None = None,
        options: RunOptions | None = None,
    ) -> RunResponse:
        """One user turn: the agent holding the conversation (and any it hands off to) answers.

        ``options``: swarm's ``model_override``, ``max_turns``, ``execute_tools`` and ``debug``
        (turn.py ``RunOptions``).
        """
        response: RunResponse | None = None
        turn = _traced(
            self._turn(session_id, user_message, context_variables, stream=False, caller=caller, options=options),
            session_id,
        )
        async with aclosing(turn) as items:
            async for item in items:
                if isinstance(item, RunResponse):
                    response = item
        assert response is not None
        return response

    async def run_stream(
        self,
        session_id: str,
        user_message: str,
        context_variables: dict[str, Any] | None = None,
        *,
        caller: Principal | None = None,
        options: RunOptions | None = None,
        message_id: str | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Every event of the turn as it happens: text deltas, tool calls, handoffs, agent changes.

        The last event is ``run_completed`` (with ``content`` and ``active_agent_name``).
        Close the iterator (``contextlib.aclosing``) when leaving early, so the session's
        lock is released at once. ``message_id``: the caller's id of ``user_message`` (an A2A
        message's ``messageId``), kept on the task that hands it to a remote agent.
        """
        turn = _traced(
            self._turn(
                session_id,
                user_message,
                context_variables,
                stream=True,
                caller=caller,
                options=options,
                message_id=message_id,
            ),
            session_id,
        )
        async with aclosing(turn) as items:
            async for item in items:
                if isinstance(item, Event):
                    yield item

    async def _turn(
        self,
        session_id: str,
        user_message: str,
        context_variables: dict[str, Any] | None,
        *,
        stream: bool,
        caller: Principal | None,
        options: RunOptions | None,
        message_id: str | None = None,
    ) -> AsyncGenerator[Event | RunResponse, None]:
        options = options or RunOptions()
        async with self.session_store.lock(session_id):
            session = await self.session_store.load(session_id)
            if session.version > 0 and caller is not None and not caller.may_see(session.owner):
                raise SessionNotFound(session_id)
            targets = self._targets()
            check_models(targets.agents, options, self.providers)
            agent, lost, cause = await self._active_member(session, targets)
            recorder = RunRecorder(self.event_log, keep=True)
            interrupted = session.open_run
            if session.version == 0 and caller is not None:
                session.owner = caller.name
            session.context_variables.update(context_variables or {})
            session.history.append({"role": "user", "content": user_message})
            session.open_run = recorder.run_id
            await self.event_log.open_run(recorder.run_id, owner=caller.name if caller is not None else None)
            await self.session_store.save(session)
            started = session.copy()
            turn = Turn(session, recorder, agent, stream, options, caller, path=[agent.name], message_id=message_id)

            async def opening() -> None:
                await turn.emit(
                    EventType.RUN_STARTED,
                    session_id=session_id,
                    agent=agent.name,
                    user_message=user_message,
                    interrupted_run=interrupted,
                )
                if lost is not None:
                    await turn.emit(EventType.AGENT_CHANGED, previous=lost, agent=agent.name, cause=cause)

            async with aclosing(self._carried(turn, started, targets, opening)) as items:
                async for item in items:
                    yield item

    async def resume(self, takeover: TurnTakeover, by: str) -> AsyncGenerator[Event, None]:
        """Carry on a turn another process started and did not end (resume.py): ``run_resumed``, then the turn.

        ``by`` names this process in the event. Nothing is yielded when the session is no
        longer marked with this turn (it ended after all, or a later turn cleared it): the
        caller then closes the run as interrupted.
        """
        async with self.session_store.lock(takeover.session_id):
            session = await self.session_store.load(takeover.session_id)
            if session.open_run != takeover.run_id:
                return
            targets = self._targets()
            reattach = takeover.reattach
            member = targets.agents.get(reattach.member or "") if reattach is not None else None
            agent = member or (await self._active_member(session, targets))[0]
            turn = Turn(
                session,
                RunRecorder(self.event_log, takeover.run_id, keep=True),
                agent,
                stream=True,
                path=[agent.name],
                resumed=True,
                reattach=reattach if member is not None else None,
            )

            async def opening() -> None:
                await turn.emit(
                    EventType.RUN_RESUMED,
                    by=by,
                    after_seq=takeover.after_seq,
                    agent=agent.name,
                    step=REATTACHED if turn.reattach is not None else REDONE,
                    task_id=turn.reattach.task_id if turn.reattach is not None else None,
                    call_id=turn.reattach.call_id if turn.reattach is not None else None,
                )
                if takeover.refused is not None:
                    raise AgentToolError(f"the turn cannot be resumed: {takeover.refused}", reason="not_resumable")

            async with aclosing(self._carried(turn, session.copy(), targets, opening)) as items:
                async for item in items:
                    if isinstance(item, Event):
                        yield item

    async def _carried(
        self, turn: Turn, started: Session, targets: Targets, opening: Callable[[], Awaitable[None]]
    ) -> AsyncGenerator[Event | RunResponse, None]:
        """A turn from its ``opening`` events to its close: its events as they are recorded, then its response.

        A failure anywhere ends the run ``run_failed`` and saves the session as the turn found it.
        """
        recorder = turn.recorder
        show = _print_event if turn.options.debug else _ignore
        try:
            await opening()
            async with aclosing(self._converse(turn, targets)) as flushes:
                async for _ in flushes:
                    for event in recorder.drain():
                        show(event)
                        yield event
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await turn.emit(
                    EventType.RUN_FAILED,
                    agent=turn.agent.name,
                    error=describe_failure(exc),
                    error_type=type(exc).__name__,
                )
                await self.event_log.close_run(recorder.run_id)
                await self._save_as_started(started)
            raise
        await self.event_log.close_run(recorder.run_id)
        for event in recorder.drain():
            show(event)
            yield event
        yield turn.response()

    async def _converse(self, turn: Turn, targets: Targets) -> AsyncGenerator[None, None]:
        """The turn itself: the router, then steps of the active agent until one answers, then the session saved.

        It yields where the events emitted so far should reach a streaming caller.
        """
        yield
        handover = Handover(self.max_handoffs_per_turn, self.fallback, self._registry.snapshot)
        if self.router is not None and not turn.resumed:  # a turn taken over was routed when it started
            await self._route(turn, targets.agents, handover)
            yield
        max_turns = turn.options.max_turns
        while not turn.done:
            if max_turns is not None and turn.steps >= max_turns:
                await turn.emit(EventType.LIMIT_REACHED, agent=turn.agent.name, limit="max_turns", value=max_turns)
                turn.finish(turn.last_said())
                break
            turn.steps += 1
            transfer: Transfer | None = None
            remote = isinstance(turn.agent, RemoteAgent)
            ids = {"run_id": turn.recorder.run_id, "session_id": turn.session.id}
            spoke = False
            with spans.agent_turn(turn.agent.name, remote=remote, step=turn.steps, **ids):
                try:
                    async with aclosing(self._step(turn, targets)) as items:
                        async for item in items:
                            if item is None:
                                spoke = True
                                yield
                            else:
                                transfer = item
                except AgentToolError as exc:
                    taker = None if spoke or not unreachable(exc) else self._taker_for(turn.agent, targets)
                    if taker is None:
                        raise
                    handoff = Handoff(taker.name, f"{turn.agent.name} could not be reached: {exc.message}")
                    await switch(turn, taker, handoff, "unreachable")
                if transfer is not None:
                    await handover.carry_out(turn, transfer)
            yield
        session = turn.session
        session.active_agent = turn.agent.name
        # Only an agent found by its URI is connected again by it in a later process; one registered by
        # name that is not registered there is gone, and the starting agent takes the session back.
        session.active_agent_uri = self._registry.uri_found(turn.agent)
        session.open_run = None
        await self.session_store.save(session)
        await turn.emit(
            EventType.RUN_COMPLETED,
            agent=turn.agent.name,
            active_agent_name=turn.agent.name,
            content=turn.content,
            handoffs=turn.handoffs,
            tool_calls=turn.tool_calls,
            session_version=session.version,
            state=turn.state.value,
            **({"pending_tool_calls": pending_calls_wire(turn.pending_tool_calls)} if turn.pending_tool_calls else {}),
            usage_by_agent=turn.recorder.usage.by_agent(),
        )

    def _taker_for(self, lost: SwarmMember, targets: Targets) -> SwarmMember | None:
        """Who takes a turn whose remote agent cannot be reached: the fallback supervisor, else the starting agent.

        None when that is the lost agent itself: the turn then fails, saying why.
        """
        name = supervisor_name(self.fallback) or self.starting_agent.name
        taker = targets.agents.get(name)
        return None if taker is None or taker is lost else taker

    def _step(self, turn: Turn, targets: Targets) -> Step:
        """The active agent's next step: a remote task, or a local model call and its tools."""
        agent = turn.agent
        if isinstance(agent, RemoteAgent):
            return remote_step(
                turn, agent, targets, history=self.history_policy, max_handoffs_per_turn=self.max_handoffs_per_turn
            )
        assert isinstance(agent, Agent)
        return local_step(
            turn,
            agent,
            targets,
            providers=self.providers,
            history=self.history_policy,
            max_tool_iterations=self.max_tool_iterations,
        )

    async def _route(self, turn: Turn, agents: dict[str, SwarmMember], handover: Handover) -> None:
        """The semantic router's decision on the user's words, recorded; a passing one hands over at once."""
        assert self.router is not None
        decision = await self.router.decide(last_user_text(turn.session.history), agents)
        if decision is None:
            return
        target = agents[decision.candidate]
        verdict = "abstain"
        if decision.passes and target is turn.agent:
            verdict = "stay"
        elif decision.passes:
            verdict = "refused" if handover.refusal(turn, target) else "route"
        await turn.emit(
            EventType.ROUTER_DECISION,
            agent=turn.agent.name,
            candidate=decision.candidate,
            example=decision.example,
            score=round(decision.score, 4),
            threshold=self.router.threshold,
            decision=verdict,
        )
        if verdict == "route":
            reason = f"semantic router: {decision.score:.2f} for {decision.example!r}"
            await switch(turn, target, Handoff(target.name, reason), "router")

    async def _save_as_started(self, session: Session) -> None:
        """After a failed turn: the session as the turn found it, plus the user's message, without the mark.

        Best effort, within a bound: the failure being reported may be the store's own.
        """
        session.open_run = None
        with anyio.move_on_after(_SAVE_AFTER_FAILURE_S), suppress(Exception):
            await self.session_store.save(session)

    async def _active_member(self, session: Session, targets: Targets) -> tuple[SwarmMember, str | None, str]:
        """The agent holding the conversation; else the starting agent, the lost name and why.

        A member found by URI in an earlier turn (or process) is connected again by its
        stored URI, unless it was forgotten (``cause: removed``).
        """
        name = session.active_agent
        if name is None:
            return self.starting_agent, None, ""
        if name in targets.agents:
            return targets.agents[name], None, ""
        cause = "not_registered"
        if self._registry.is_forgotten(name, session.active_agent_uri):
            cause = "removed"
        elif session.active_agent_uri and targets.connect is not None:
            with suppress(AgentHandoffError):
                return await targets.named(session.active_agent_uri), None, ""
        session.handoff = None
        session.active_agent_uri = None
        return self.starting_agent, name, cause

    def _targets(self) -> Targets:
        """How this turn finds transfer targets: in a snapshot of the registry, else as the policy allows."""
        gateway = self.gateway
        return Targets(
            self._registry,
            self._registry.snapshot(),
            self.targets,
            connector(gateway, self.targets),
            host_allowed=gateway.allowed_hosts.allows if gateway is not None else lambda uri: True,
        )


def _print_event(event: Event) -> None:
    """``debug=True``: the event as the API shows it, one line on stderr."""
    print(f"[switchboard debug] {event.to_json().decode()}", file=sys.stderr, flush=True)


def _ignore(event: Event) -> None:
    """Events are not printed without ``debug``."""


async def _traced(items: AsyncGenerator[Any, None], session_id: str) -> AsyncGenerator[Any, None]:
    """A turn inside its run span (telemetry/spans.py), which learns the run id from ``run_started``."""
    with spans.run(session_id) as span:
        async with aclosing(items) as turn:
            async for item in turn:
                if span is not None and type(item) is RunStartedEvent:
                    spans.run_started(span, item.run_id, item.agent)
                yield item
