"""The swarm runner: one user turn, from the active agent through tools and transfers to an answer.

The loop, in the order a reader meets it in ``_turn``:

1. Load the session (history, active agent, context variables) under the session's lock,
   append the user message and save it at once with the turn's run id, so a crash
   leaves the message and the mark of an unfinished turn (``open_run``).
   Every local agent's model must resolve (a name through the providers) before then.
2. With a semantic router, the user's words may go straight to the agent whose examples
   they match (router.py), before any model runs.
3. Ask the active agent: a local Agent's model with its tools (domain tools plus one
   ``transfer_to_*`` tool per handoff) and its tool settings, or a RemoteAgent over its peer.
4. A local model's tool calls run, ordinary tools first, concurrently when the agent allows
   parallel tool calls; results go into the history in the order the model asked. The
   first transfer in the response is honoured (a ``transfer_to_*`` tool, or a tool that
   returned an agent), later ones are answered with an explanation. A transfer checks the
   target is known, the handoff limit and the ping-pong cycle rule, then switches the
   active agent, records a ``HANDOFF_SUCCESS`` tool result and goes back to 3 with the new
   agent. A refused transfer ends transfers for the turn; the current agent is told why and
   answers, unless the runner's fallback (fallback.py) takes the conversation.
5. A model response without tool calls (or a remote reply without a transfer) ends the
   turn. The session is saved with compare-and-set; every step went to the event log. A
   turn that fails saves the session as it was when the turn started, the mark removed.

A turn may run on behalf of a caller (a ``Principal``): a session it did not start is,
to a caller that is not an admin, a session that does not exist (``SessionNotFound``).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import sys
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, aclosing, nullcontext, suppress
from typing import TYPE_CHECKING, Any

import anyio
import orjson

from agent_server.http.auth import Principal
from gateway import defaults
from gateway.errors import AgentHandoffError, ModelNotConfigured, SessionNotFound
from gateway.event_log import EventLog, MemoryEventLog
from gateway.models.base import (
    HANDOFF_SUCCESS,
    ChatMessage,
    ChatModel,
    ModelResponse,
    TextDelta,
    ToolCall,
    model_identity,
)
from gateway.models.providers import Providers
from gateway.recording.events import Event, EventType
from gateway.recording.recorder import RunRecorder
from gateway.swarm.admission import ANSWER_NOW, HANDOFF_LIMIT_MESSAGE, Refusal, refusal
from gateway.swarm.agent import Agent
from gateway.swarm.failure import describe_failure
from gateway.swarm.fallback import CURRENT, ESCALATION_MESSAGE, HUMAN, Fallback, escalates, supervisor_name
from gateway.swarm.handoff import Handoff, TransferTool
from gateway.swarm.history_policy import FullHistory, HistoryPolicy, handoff_payload, last_user_text
from gateway.swarm.member import SwarmMember
from gateway.swarm.registry import AgentRegistry, ConnectURI, find_by_name
from gateway.swarm.remote import RemoteAgent, RemoteReply, task_params
from gateway.swarm.router import SemanticRouter
from gateway.swarm.sessions import HandoffRecord, MemorySessionStore, Session, SessionStore
from gateway.swarm.trust import forbidden_for_remote
from gateway.swarm.turn import RunOptions, RunResponse, Turn, in_turn, pending_calls_wire
from gateway.telemetry import spans
from gateway.tools import Tool, ToolResult
from protocol import HandoffRequest, TaskState
from protocol.handoff_names import sanitize_agent_name, transfer_tool_name

if TYPE_CHECKING:
    from gateway.calls.coordinator import Gateway

__all__ = ["HANDOFF_LIMIT_MESSAGE", "TOOL_LIMIT_MESSAGE", "Runner"]

TOOL_LIMIT_MESSAGE = "Maximum tool iterations exceeded for a single turn."
ONE_TRANSFER_MESSAGE = "Only the first transfer in a response is honoured; this one was not carried out."
FALLBACK_ANSWER = "Sorry, I could not finish that within the limits of a single turn."
NOT_RUN_MESSAGE = "Not run: this turn returned the call to its caller (execute_tools=False)."

_SAVE_AFTER_FAILURE_S = 5.0
_MODEL_KEYS = ("role", "content", "tool_calls", "tool_call_id")
_MODEL_NAME_CHARS = 64

Flush = AsyncGenerator[None, None]
"""What a step of the loop is: it yields where the events emitted so far should reach a streaming caller."""
Outcome = tuple[str, Handoff | SwarmMember | None, dict[str, Any]]
"""One tool call done: its result as text, the transfer it asks for (by name or as an agent), context updates."""


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
        resolve_uris: bool = True,
        providers: Providers | None = None,
        fallback: Fallback = CURRENT,
        router: SemanticRouter | None = None,
        dynamic_agents: bool = True,
    ) -> None:
        """``providers`` resolve agents' model names (default: the environment's OpenAI-compatible one).

        ``fallback`` takes the conversation when the handoff limit or a cycle trips
        (fallback.py); ``router`` routes user messages by example utterances (router.py);
        ``dynamic_agents`` lets a tool hand off to an agent object nothing registered
        (registry.py ``adopt``).
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
        self.resolve_uris = resolve_uris
        self.providers = providers or Providers()
        self.fallback = fallback
        self.router = router
        self.dynamic_agents = dynamic_agents
        self._registry = AgentRegistry(starting_agent)
        if not isinstance(fallback, str):
            self._registry.register(fallback)
        self._registry.snapshot()

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
    ) -> AsyncGenerator[Event, None]:
        """Every event of the turn as it happens: text deltas, tool calls, handoffs, agent changes.

        The last event is ``run_completed`` (with ``content`` and ``active_agent_name``).
        Close the iterator (``contextlib.aclosing``) when leaving early, so the session's
        lock is released at once.
        """
        turn = _traced(
            self._turn(session_id, user_message, context_variables, stream=True, caller=caller, options=options),
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
    ) -> AsyncGenerator[Event | RunResponse, None]:
        options = options or RunOptions()
        async with self.session_store.lock(session_id):
            session = await self.session_store.load(session_id)
            if session.version > 0 and caller is not None and not caller.may_see(session.owner):
                raise SessionNotFound(session_id)
            agents = self._registry.snapshot()
            self._check_models(agents, options)
            agent, lost, cause = await self._active_member(session, agents)
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
            turn = Turn(session, recorder, agent, stream, options, caller, path=[agent.name])
            show = _print_event if options.debug else _ignore
            try:
                await turn.emit(
                    EventType.RUN_STARTED,
                    session_id=session_id,
                    agent=agent.name,
                    user_message=user_message,
                    interrupted_run=interrupted,
                )
                if lost is not None:
                    await turn.emit(EventType.AGENT_CHANGED, previous=lost, agent=agent.name, cause=cause)
                async with aclosing(self._converse(turn, agents)) as flushes:
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

    async def _converse(self, turn: Turn, agents: dict[str, SwarmMember]) -> Flush:
        """The turn itself: the router, then steps of the active agent until one answers, then the session saved."""
        yield
        if self.router is not None:
            await self._route(turn, agents)
            yield
        max_turns = turn.options.max_turns
        while not turn.done:
            if max_turns is not None and turn.steps >= max_turns:
                await turn.emit(EventType.LIMIT_REACHED, agent=turn.agent.name, limit="max_turns", value=max_turns)
                turn.finish(turn.last_said())
                break
            turn.steps += 1
            remote = isinstance(turn.agent, RemoteAgent)
            step = self._remote_step if remote else self._local_step
            ids = {"run_id": turn.recorder.run_id, "session_id": turn.session.id}
            with spans.agent_turn(turn.agent.name, remote=remote, step=turn.steps, **ids):
                async with aclosing(step(turn, agents)) as flushes:
                    async for _ in flushes:
                        yield
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

    async def _save_as_started(self, session: Session) -> None:
        """After a failed turn: the session as the turn found it, plus the user's message, without the mark.

        Best effort, within a bound: the failure being reported may be the store's own.
        """
        session.open_run = None
        with anyio.move_on_after(_SAVE_AFTER_FAILURE_S), suppress(Exception):
            await self.session_store.save(session)

    async def _local_step(self, turn: Turn, agents: dict[str, SwarmMember]) -> Flush:
        """One model call of a local agent, then its tool calls.

        Once the turn has used up ``max_tool_iterations`` the model is offered no tools and
        told to answer; tool calls it still makes are dropped. With ``execute_tools=False``
        its first tool calls end the turn instead of running.
        """
        agent = turn.agent
        assert isinstance(agent, Agent)
        tools = [t for t in agent.get_all_tools() if not _transfer_to_forgotten(t, agents)]
        final = turn.tool_calls >= self.max_tool_iterations
        offered = (
            [] if final else [t.spec for t in tools if not (turn.transfers_blocked and isinstance(t, TransferTool))]
        )
        messages = await self._model_messages(agent, turn)
        if final:
            messages.append({"role": "system", "content": f"{TOOL_LIMIT_MESSAGE} {ANSWER_NOW}"})
        model = self._model(agent, turn.options)
        response: ModelResponse | None = None
        system, model_name = model_identity(model)
        started = time.perf_counter()
        with spans.model_call(agent.name, system, model_name) as span:
            if turn.stream:
                async with _closing(model.stream(messages, offered, agent.settings)) as items:
                    async for item in items:
                        if isinstance(item, TextDelta):
                            await turn.emit(EventType.TEXT_DELTA, agent=agent.name, text=item.text)
                            yield
                        else:
                            response = item
                if response is None:
                    raise RuntimeError(f"the model of agent {agent.name!r} ended its stream without a response")
            else:
                response = await model.complete(messages, offered, agent.settings)
            usage = response.usage
            tokens = (
                {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens} if usage else {}
            )
            spans.usage(span, tokens.get("prompt_tokens"), tokens.get("completion_tokens"), response.cost_usd)
        await turn.emit(
            EventType.MODEL_CALL,
            agent=agent.name,
            system=system,
            model=model_name,
            cost_usd=response.cost_usd,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            **tokens,
        )
        calls = [] if final else list(response.tool_calls)
        await turn.say(_assistant_message(agent.name, response.content, calls))
        if calls and not turn.options.execute_tools:
            for call in calls:
                await turn.tool_result(agent.name, call.id, call.name, NOT_RUN_MESSAGE)
            turn.pending_tool_calls = calls
            turn.finish(response.content)
        elif calls:
            await self._run_tool_calls(turn, tools, calls, agents, concurrently=agent.parallel_tool_calls)
        else:
            turn.finish(response.content or (FALLBACK_ANSWER if final else ""))

    async def _run_tool_calls(
        self,
        turn: Turn,
        tools: list[Tool],
        calls: list[ToolCall],
        agents: dict[str, SwarmMember],
        *,
        concurrently: bool,
    ) -> None:
        """Ordinary tools first, then transfers; only the first transfer asked for is honoured.

        The calls within ``max_tool_iterations`` run one after another, or all at once
        (``concurrently``); either way each sees the context variables as the response
        found them, their updates are merged in the order the model asked, and results go
        into the history in that order. Calls past the limit are answered without running.
        """
        source = turn.agent.name
        by_name = {t.name: t for t in tools}
        ordinary_first = sorted(range(len(calls)), key=lambda i: isinstance(by_name.get(calls[i].name), TransferTool))
        room = max(0, self.max_tool_iterations - turn.tool_calls)
        running = ordinary_first[:room]
        turn.tool_calls += len(running)
        for i in running:
            call = calls[i]
            await turn.emit(
                EventType.TOOL_CALL, agent=source, tool=call.name, call_id=call.id, arguments=call.arguments
            )
        context = copy.deepcopy(turn.session.context_variables)
        thunks = [functools.partial(self._invoke, turn, by_name.get(calls[i].name), calls[i], context) for i in running]
        outcomes = dict(zip(running, await _gather(thunks, concurrently=concurrently), strict=True))
        if len(running) < len(calls):
            await turn.emit(
                EventType.LIMIT_REACHED, agent=source, limit="max_tool_iterations", value=self.max_tool_iterations
            )
        results = dict.fromkeys(ordinary_first[room:], TOOL_LIMIT_MESSAGE)
        requests: list[tuple[int, Handoff | SwarmMember]] = []
        for i in sorted(outcomes):
            results[i], request, updates = outcomes[i]
            turn.session.context_variables.update(updates)
            if request is not None:
                requests.append((i, request))
        accepted: tuple[SwarmMember, Handoff] | None = None
        escalation: tuple[Refusal, SwarmMember] | None = None
        if requests:
            i, request = requests[0]
            target, handoff = await self._target(request, agents)
            refused = await self._admit(turn, target, handoff)
            results[i] = _join(
                results[i], refused.message if refused else _handoff_success(target.name, handoff.reason)
            )
            if refused is None:
                accepted = (target, handoff)
            elif escalates(self.fallback, refused.cause):
                escalation = (refused, target)
        for i, request in requests[1:]:
            await turn.emit(
                EventType.HANDOFF_REFUSED,
                source=source,
                target=request.target_agent_name if isinstance(request, Handoff) else request.name,
                cause="one_per_response",
                reason=request.reason if isinstance(request, Handoff) else None,
            )
            results[i] = _join(results[i], ONE_TRANSFER_MESSAGE)
        for i, call in enumerate(calls):
            await turn.tool_result(source, call.id, call.name, results[i])
        if accepted is not None:
            await self._switch(turn, *accepted)
        elif escalation is not None:
            await self._fall_back(turn, *escalation)

    async def _invoke(self, turn: Turn, tool: Tool | None, call: ToolCall, context: dict[str, Any]) -> Outcome:
        """Run one tool on its own deep copy of ``context``; a tool that raises (bad arguments too) is an error result.

        The value becomes the result text; a Handoff, an agent, or a ToolResult naming one
        is a transfer request; a ToolResult's ``context_variables`` are the updates.
        """
        if tool is None:
            return f"Error: agent {turn.agent.name!r} has no tool named {call.name!r}.", None, {}
        try:
            with turn.recorder.active(), in_turn(turn.scope), spans.tool_call(call.name, call.id):
                value = await tool.invoke(dict(call.arguments), copy.deepcopy(context))
        except Exception as exc:
            return f"Error: {type(exc).__name__}: {exc}", None, {}
        if isinstance(value, ToolResult):
            request = value.agent if _is_transfer(value.agent) else None
            return _result_text(value.value), request, dict(value.context_variables or {})
        if _is_transfer(value):
            return "", value, {}
        return _result_text(value), None, {}

    async def _target(
        self, request: Handoff | SwarmMember, agents: dict[str, SwarmMember]
    ) -> tuple[SwarmMember, Handoff]:
        """The agent a local transfer request names: by name (or URI), or the agent object a tool returned."""
        if isinstance(request, Handoff):
            return await self._registry.resolve(request.target_agent_name, agents, self._connector()), request
        member = self._registry.adopt(request, agents, dynamic=self.dynamic_agents)
        return member, Handoff(member.name)

    async def _admit(self, turn: Turn, target: SwarmMember, handoff: Handoff) -> Refusal | None:
        """None when the transfer may happen (admission.py); else why not, recorded, and transfers end for the turn."""
        source = turn.agent.name
        refused = refusal(
            source,
            target.name,
            path=turn.path,
            transfers_blocked=turn.transfers_blocked,
            max_handoffs_per_turn=self.max_handoffs_per_turn,
        )
        if refused is None:
            return None
        if refused.cause == "max_handoffs_per_turn":
            await turn.emit(
                EventType.LIMIT_REACHED, agent=source, limit="max_handoffs_per_turn", value=self.max_handoffs_per_turn
            )
        elif refused.cycle is not None:
            await turn.emit(
                EventType.CYCLE_DETECTED, agent=source, source=source, target=target.name, path=refused.cycle
            )
        turn.transfers_blocked = True
        await turn.emit(
            EventType.HANDOFF_REFUSED, source=source, target=target.name, cause=refused.cause, reason=handoff.reason
        )
        return refused

    async def _fall_back(self, turn: Turn, refused: Refusal, target: SwarmMember) -> bool:
        """The limit or the cycle tripped: a human or the supervisor takes the conversation (fallback.py).

        False when the supervisor already holds it: it answers, as with ``current``.
        """
        name = supervisor_name(self.fallback)
        supervisor = None if name is None else find_by_name(self._registry.snapshot(), name)
        if name is not None and supervisor is None:
            raise AgentHandoffError(f"the fallback agent {name!r} is not registered with the Runner", target=name)
        if supervisor is turn.agent:
            return False
        await turn.emit(
            EventType.ESCALATED,
            agent=turn.agent.name,
            reason=refused.cause,
            target=target.name,
            path=list(turn.path),
            fallback=HUMAN if supervisor is None else supervisor.name,
        )
        if supervisor is None:
            await turn.say({"role": "assistant", "content": ESCALATION_MESSAGE, "sender": turn.agent.name})
            turn.finish(ESCALATION_MESSAGE, TaskState.INPUT_REQUIRED)
        else:
            await self._switch(turn, supervisor, Handoff(supervisor.name, f"fallback: {refused.cause}"), "fallback")
        return True

    async def _route(self, turn: Turn, agents: dict[str, SwarmMember]) -> None:
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
            blocked = refusal(
                turn.agent.name,
                target.name,
                path=turn.path,
                transfers_blocked=turn.transfers_blocked,
                max_handoffs_per_turn=self.max_handoffs_per_turn,
            )
            verdict = "refused" if blocked else "route"
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
            await self._switch(turn, target, Handoff(target.name, reason), "router")

    async def _switch(self, turn: Turn, target: SwarmMember, handoff: Handoff, cause: str | None = None) -> None:
        """The transfer itself: new active agent, context updates, the record history policies read."""
        source = turn.agent
        turn.path.append(target.name)
        turn.last_handoff = dataclasses.replace(handoff, target_agent_name=target.name)
        turn.agent = target
        turn.arrival = turn.session.set_active_agent(
            target, handoff.context_variables, reason=handoff.reason, payload=handoff.payload, source=source.name
        )
        with spans.handoff(source.name, target.name, handoff.reason, turn.handoffs, turn.recorder.run_id):
            await turn.emit(
                EventType.HANDOFF,
                source=source.name,
                target=target.name,
                reason=handoff.reason,
                hop=turn.handoffs,
                remote=isinstance(source, RemoteAgent) or isinstance(target, RemoteAgent),
            )
            await turn.emit(EventType.AGENT_CHANGED, previous=source.name, agent=target.name, **_cause(cause))

    async def _remote_step(self, turn: Turn, agents: dict[str, SwarmMember]) -> Flush:
        """One task on a remote agent; its transfer request goes through the same checks as a local one."""
        remote = turn.agent
        assert isinstance(remote, RemoteAgent)
        session = turn.session
        handoffs_allowed = not turn.transfers_blocked
        arrival, turn.arrival = turn.arrival, None
        params = task_params(
            task_id=session.remote_tasks.pop(remote.name, None),
            session_id=session.id,
            text=turn.remote_input or last_user_text(session.history),
            conversation=await self._view(remote, turn),
            handoff=None if arrival is None else _handoff_metadata(arrival, session),
            metadata={
                "session_id": session.id,
                "agent": remote.name,
                "path": list(turn.path),
                "hop": turn.handoffs,
                "max_handoffs_per_turn": self.max_handoffs_per_turn,
                "handoffs_allowed": handoffs_allowed,
                "history_policy": self.history_policy.name,
            },
        )
        reply: RemoteReply | None = None
        async with aclosing(remote.ask(params, turn.recorder)) as items:
            async for item in items:
                if isinstance(item, TextDelta):
                    await turn.emit(EventType.TEXT_DELTA, agent=remote.name, text=item.text, remote=True)
                    yield
                else:
                    reply = item
        assert reply is not None
        if reply.state == TaskState.INPUT_REQUIRED:
            session.remote_tasks[remote.name] = reply.task_id
        if reply.handoff is None:
            message: ChatMessage = {"role": "assistant", "content": reply.text or None, "sender": remote.name}
            await turn.say(message, state=reply.state.value, remote=True, cost_usd=reply.cost_usd)
            turn.finish(reply.text)
        else:
            await self._remote_transfer(turn, reply, reply.handoff, agents, handoffs_allowed)

    async def _remote_transfer(
        self,
        turn: Turn,
        reply: RemoteReply,
        request: HandoffRequest,
        agents: dict[str, SwarmMember],
        handoffs_allowed: bool,
    ) -> None:
        """Record the request as a transfer tool call, so every agent reads one kind of history.

        A refused request is put to the remote agent once more (``remote_input``); if it
        asks again although transfers were over, its text is the answer.
        """
        remote = turn.agent.name
        forbidden = forbidden_for_remote(
            request.target,
            agents,
            known_at=lambda uri: self._registry.known_at(uri, agents),
            resolve_uris=self.resolve_uris,
            host_allowed=self.gateway.allowed_hosts.allows if self.gateway is not None else lambda uri: True,
        )
        target = None if forbidden else await self._registry.resolve(request.target, agents, self._connector())
        target_name = request.target if target is None else target.name
        call_id = "handoff_" + uuid.uuid4().hex[:16]
        tool = transfer_tool_name(target_name)
        arguments = {"reason": request.reason} if request.reason else {}
        function = {"name": tool, "arguments": orjson.dumps(arguments).decode()}
        call = {"id": call_id, "type": "function", "function": function}
        await turn.say(
            {"role": "assistant", "content": reply.text or None, "sender": remote, "tool_calls": [call]},
            remote=True,
            cost_usd=reply.cost_usd,
        )
        await turn.emit(EventType.TOOL_CALL, agent=remote, tool=tool, call_id=call_id, arguments=arguments, remote=True)
        if target is None:
            assert forbidden is not None
            cause, detail = forbidden
            turn.transfers_blocked = True
            await turn.emit(
                EventType.HANDOFF_REFUSED,
                source=remote,
                target=request.target,
                cause=cause,
                reason=request.reason,
                detail=detail,
                remote=True,
            )
            await turn.tool_result(remote, call_id, tool, f"Transfer refused: {detail}", remote=True)
            turn.finish(reply.text or FALLBACK_ANSWER)
            return
        handoff = Handoff(target.name, request.reason, payload=dict(request.payload or {}))
        refused = await self._admit(turn, target, handoff)
        await turn.tool_result(
            remote,
            call_id,
            tool,
            refused.message if refused else _handoff_success(target.name, request.reason),
            remote=True,
        )
        if refused is None:
            turn.remote_input = None
            await self._switch(turn, target, handoff)
        elif escalates(self.fallback, refused.cause) and await self._fall_back(turn, refused, target):
            turn.remote_input = None
        elif handoffs_allowed:
            turn.remote_input = f"{refused.message} Your request to transfer to {target.name!r} was not carried out."
        else:
            turn.finish(reply.text or FALLBACK_ANSWER)

    def _check_models(self, agents: dict[str, SwarmMember], options: RunOptions) -> None:
        """Every local agent's model resolves (or the override does); ModelNotConfigured says what to set."""
        for agent in agents.values():
            if isinstance(agent, Agent):
                self._model(agent, options)
            if options.model_override is not None:
                return

    def _model(self, agent: Agent, options: RunOptions) -> ChatModel:
        """The model ``agent`` uses in this turn: the override, else its own; a name resolves through the providers."""
        chosen = options.model_override if options.model_override is not None else agent.model
        if not isinstance(chosen, str):
            return agent.get_model() if chosen is None else chosen
        try:
            return self.providers.chat_model(chosen)
        except ModelNotConfigured as exc:
            raise ModelNotConfigured(f"agent {agent.name!r}: {exc}") from None

    async def _model_messages(self, agent: Agent, turn: Turn) -> list[ChatMessage]:
        """The agent's instructions, then the history as its model may see it."""
        system = {"role": "system", "content": agent.get_instructions(turn.session.context_variables)}
        return [system, *(_for_model(m) for m in await self._view(agent, turn))]

    async def _view(self, agent: SwarmMember, turn: Turn) -> list[ChatMessage]:
        """The history as the policy shows it to ``agent`` (the handoff applies to its target only)."""
        session = turn.session
        handoff = session.handoff if session.handoff is not None and session.handoff.target == agent.name else None
        return await self.history_policy.view(session.history, handoff, session.context_variables)

    async def _active_member(
        self, session: Session, agents: dict[str, SwarmMember]
    ) -> tuple[SwarmMember, str | None, str]:
        """The agent holding the conversation; else the starting agent, the lost name and why.

        A member found by URI in an earlier turn (or process) is connected again by its
        stored URI, unless it was forgotten (``cause: removed``).
        """
        name = session.active_agent
        if name is None:
            return self.starting_agent, None, ""
        if name in agents:
            return agents[name], None, ""
        cause = "not_registered"
        connect = self._connector()
        if self._registry.is_forgotten(name, session.active_agent_uri):
            cause = "removed"
        elif session.active_agent_uri and connect is not None:
            with suppress(AgentHandoffError):
                return await self._registry.resolve(session.active_agent_uri, agents, connect), None, ""
        session.handoff = None
        session.active_agent_uri = None
        return self.starting_agent, name, cause

    def _connector(self) -> ConnectURI | None:
        """How the registry reaches a URI target: through the gateway, on an allowed host, unless URIs are off."""
        if not self.resolve_uris or self.gateway is None:
            return None
        gateway = self.gateway

        async def connect(uri: str) -> SwarmMember:
            if not gateway.allowed_hosts.allows(uri):
                raise AgentHandoffError(f"{uri!r} is not on a host the gateway may connect to", target=uri)
            return await RemoteAgent.connect(uri, gateway)

        return connect


async def _gather(thunks: Sequence[Callable[[], Awaitable[Outcome]]], *, concurrently: bool) -> list[Outcome]:
    """Each thunk's outcome, in order: one after another, or all at once in a task group."""
    outcomes: list[Outcome | None] = [None] * len(thunks)

    async def run(index: int) -> None:
        outcomes[index] = await thunks[index]()

    if concurrently and len(thunks) > 1:
        async with anyio.create_task_group() as tasks:
            for index in range(len(thunks)):
                tasks.start_soon(run, index)
    else:
        for index in range(len(thunks)):
            await run(index)
    return [outcome for outcome in outcomes if outcome is not None]


def _is_transfer(value: Any) -> bool:
    """A tool's value that asks for a transfer: a Handoff, or an agent (OpenAI swarm's way)."""
    return isinstance(value, Handoff | Agent | RemoteAgent)


def _cause(cause: str | None) -> dict[str, str]:
    return {} if cause is None else {"cause": cause}


def _handoff_metadata(arrival: HandoffRecord, session: Session) -> dict[str, Any]:
    """``metadata.handoff`` of the first task a remote agent gets after a transfer to it, with the HandoffPayload."""
    payload = handoff_payload(session.history[: arrival.at], arrival, session.context_variables)
    return {
        "source": arrival.source,
        "target": arrival.target,
        "reason": arrival.reason,
        "payload": payload.model_dump(mode="json"),
    }


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
                if span is not None and isinstance(item, Event) and item.type == EventType.RUN_STARTED.value:
                    spans.run_started(span, item.run_id, item.fields.get("agent"))
                yield item


def _closing(items: AsyncIterator[Any]) -> AbstractAsyncContextManager[AsyncIterator[Any]]:
    """Close a model's stream in this task when we stop early (not whenever it is collected)."""
    return aclosing(items) if hasattr(items, "aclose") else nullcontext(items)  # type: ignore[type-var]


def _assistant_message(sender: str, content: str, calls: list[ToolCall]) -> ChatMessage:
    message = ModelResponse(content=content, tool_calls=calls).to_message()
    message["sender"] = sender
    return message


def _for_model(message: ChatMessage) -> ChatMessage:
    """OpenAI-shaped message: our ``sender`` becomes ``name`` (a valid identifier) on assistant turns."""
    clean = {k: message[k] for k in _MODEL_KEYS if k in message}
    if message.get("role") == "assistant" and message.get("sender"):
        clean["name"] = sanitize_agent_name(str(message["sender"]))[:_MODEL_NAME_CHARS]
    return clean


def _transfer_to_forgotten(tool: Tool, agents: dict[str, SwarmMember]) -> bool:
    """A transfer tool whose target is no longer in the swarm (``Runner.forget``) is not offered."""
    return isinstance(tool, TransferTool) and agents.get(tool.target.name) is not tool.target


def _handoff_success(target: str, reason: str | None) -> str:
    return orjson.dumps(
        {"status": HANDOFF_SUCCESS, "assistant": target, "reason": reason or "Specialist routing"}
    ).decode()


def _result_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if hasattr(value, "model_dump"):
        return orjson.dumps(value.model_dump(mode="json")).decode()
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def _join(first: str, second: str) -> str:
    return f"{first}\n{second}" if first else second
