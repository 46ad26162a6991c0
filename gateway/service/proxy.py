"""Every registered remote agent behind the gateway, on every binding: ``/proxy/{name}``.

A client that wants one particular agent rather than the swarm calls it through the gateway
at ``/proxy/{name}``, as it would call the agent itself: JSON-RPC at that URL, HTTP+JSON under
``/proxy/{name}/a2a/rest``, A2A-NDJSON under ``/proxy/{name}/tasks/``, the card at
``/proxy/{name}/.well-known/agent-card.json``: the agent's own description, skills and media
types, with interfaces that point at the gateway. Through the gateway rather than straight to
the agent because then the gateway's tokens and task ownership apply, the agent's own
credential never leaves the gateway, each send is a run in the event log (``GET /runs``) with
the engine's events, spans and metrics, the agent's ``max_cost_usd`` holds, and a cancel of the
gateway's task reaches the agent's.

Each proxied agent is an agent_server app (the bindings every Switchboard agent has) made at
its first request and kept for the gateway's life. Its tasks are the gateway's own, kept in
memory by the replica that ran them; each send calls the agent through the one engine
(``RemoteAgent.ask``) with the caller's message, message id, context id and metadata. An
agent that asks for input ends the gateway's task ``input-required``, and the caller's next
message on that task continues the agent's task.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import anyio
from anyio.abc import TaskGroup, TaskStatus
from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

from agent_server import DataChunk, Failed, Handoff, InputRequired, TaskContext, TaskManager, TextChunk, create_app
from agent_server.app import CARD_PATHS
from agent_server.http.auth import TokenTable
from agent_server.http.responses import error_response
from agent_server.push.settings import PushSettings
from gateway.errors import AgentToolError
from gateway.models.base import TextDelta
from gateway.recording.recorder import RunRecorder
from gateway.service.core import GatewayService
from gateway.service.hosted import ServedAgent, spend_refused
from gateway.swarm import RemoteAgent
from gateway.swarm.remote import RemoteReply
from protocol import (
    AgentCard,
    Artifact,
    DataPart,
    ErrorCode,
    FilePart,
    Message,
    ProtocolError,
    TaskSendParams,
    TaskState,
)
from protocol.card import grpc_address

logger = logging.getLogger("gateway.service.proxy")

PROXY_PATH = "/proxy"
MAX_WAITING_TASKS = 10_000
"""Tasks waiting for the caller's input whose agent task is remembered (the oldest forgotten first)."""


@dataclass
class ProxiedAgent(ServedAgent):
    """A registered remote agent as the gateway serves it; its card is read from the live registration."""

    service: GatewayService = field(kw_only=True)
    grpc_port: Callable[[], int | None] = field(default=lambda: None, kw_only=True)
    """The gateway's gRPC port, where this agent is the tenant of its name (None: no gRPC)."""
    waiting: dict[str, str] = field(default_factory=dict)
    """The gateway's task -> the agent's task, for tasks that ended ``input-required``."""

    def card(self, url: str) -> AgentCard:
        remote = registered(self.service, self.name)
        theirs = remote.card
        card = AgentCard.standard(
            name=self.name,
            url=url,
            description=theirs.description or remote.description,
            skills=list(theirs.skills),
            input_modes=list(theirs.default_input_modes),
            output_modes=list(theirs.default_output_modes),
        )
        port = self.grpc_port()
        return card if port is None else card.with_grpc(grpc_address(url, port), tenant=self.name)

    def refused_media_type(self, message: Message) -> str | None:
        """The agent judges what it takes: the gateway passes every part on."""
        return None

    def remember(self, task_id: str, reply: RemoteReply) -> None:
        self.waiting.pop(task_id, None)
        if not reply.state.is_terminal and reply.task_id:
            self.waiting[task_id] = reply.task_id
            if len(self.waiting) > MAX_WAITING_TASKS:
                del self.waiting[next(iter(self.waiting))]


def registered(service: GatewayService, name: str) -> RemoteAgent:
    """The remote agent registered as ``name`` now; 404 when there is none (never one, or removed since)."""
    member = service.members.agents().get(name)
    if not isinstance(member, RemoteAgent):
        remotes = sorted(n for n, m in service.members.agents().items() if isinstance(m, RemoteAgent))
        raise ProtocolError(
            ErrorCode.TASK_NOT_FOUND,
            f"no remote agent named {name!r} is registered, so none is proxied at {PROXY_PATH}/{name} "
            f"(proxied: {', '.join(remotes) or 'none'})",
            http_status=404,
        )
    return member


def proxied_agent(
    service: GatewayService, name: str, grpc_port: Callable[[], int | None] = lambda: None
) -> ProxiedAgent:
    """The agent registered as ``name`` as a HostedAgent whose every send is a run of the caller's."""

    async def run(ctx: TaskContext) -> AsyncGenerator[Any, None]:
        refused = await spend_refused(service.quotas, ctx)
        if refused is not None:
            yield refused
            return
        await service.sync_registrations()
        remote = registered(service, name)
        params = TaskSendParams(
            id=agent.waiting.pop(ctx.task_id, None),
            session_id=ctx.session_id,
            message=ctx.message,
            metadata=ctx.metadata or None,
        )
        reply: RemoteReply | None = None
        streamed = False
        async with service.owned_run(ctx.caller) as run_id:
            logger.info("proxy %s: task %s is run %s", name, ctx.task_id, run_id)

            async def stop(*_reason: str) -> None:  # at shutdown (no reason), or a cancel of the run
                await agent.cancel_task(ctx.task_id)

            with service.runs.stoppable(stop), service.runs.named(run_id, stop):
                try:
                    async with aclosing(remote.ask(params, RunRecorder(service.event_log, run_id))) as items:
                        async for item in items:
                            if isinstance(item, TextDelta):
                                streamed = True
                                yield TextChunk(item.text)
                            else:
                                reply = item
                except AgentToolError as exc:
                    yield Failed(f"{name} failed ({exc.reason}): {exc.message}")
                    return
        assert reply is not None
        agent.remember(ctx.task_id, reply)
        for item in _answer(reply, streamed):
            yield item

    agent = ProxiedAgent(name=name, handler=run, service=service, grpc_port=grpc_port)
    return agent


def _answer(reply: RemoteReply, streamed: bool) -> list[Any]:
    """What is left to pass on once the agent's task ended: the text not streamed, data, files, cost, its end."""
    answer = reply.message
    if answer is None and _said_only(reply, streamed):
        answer = Message.agent(reply.text)
    if answer is not None:  # answered with a Message alone: so does the gateway
        return [answer]
    items: list[Any] = []
    if reply.text and not streamed:
        items.append(TextChunk(reply.text))
    for artifact in reply.artifacts:
        files = [part for part in artifact.parts if isinstance(part, FilePart)]
        items.extend(DataChunk(part.data) for part in artifact.parts if isinstance(part, DataPart))
        if files:
            items.append(Artifact(name=artifact.name, parts=files, index=artifact.index + 1))  # 0 is the text's
    if reply.cost_usd:  # the call spent it from this task's account: the server adds it to this line, once
        items.append(TextChunk(""))
    if reply.handoff is not None:
        items.append(Handoff(reply.handoff.target, reply.handoff.reason, reply.handoff.payload))
    elif reply.state.value in ("input-required", "auth-required"):
        items.append(InputRequired(reply.text))
    elif reply.state.value in ("failed", "rejected"):
        items.append(Failed(reply.text or f"the agent's task ended {reply.state.value}"))
    return items


def _said_only(reply: RemoteReply, streamed: bool) -> bool:
    """A task that completed with its status message and nothing else: how a Switchboard agent (over NDJSON)
    answers with a bare Message, which the standard bindings then answer as that message."""
    return (
        reply.state is TaskState.COMPLETED
        and bool(reply.text)
        and not streamed
        and not reply.artifacts
        and reply.handoff is None
    )


class AgentProxies:
    """The ASGI app under ``/proxy/{name}`` (and the gRPC face's tenants): one agent_server app per proxied agent,
    running for the gateway's life.

    Each app's lifespan runs in a task of this object's task group (so it is entered and left
    in one task); leaving ``async with`` ends them all.
    """

    def __init__(
        self,
        service: GatewayService,
        *,
        tokens: TokenTable,
        max_body_bytes: int,
        public_url: str | None = None,
        push: PushSettings | None = None,
        grpc_port: Callable[[], int | None] = lambda: None,
    ) -> None:
        """``tokens``, ``push``: the gateway face's own, so a proxied agent is called and pushes as the gateway does;
        ``grpc_port``: the face's gRPC port once bound, where each proxied agent is the tenant of its name."""
        self._service = service
        self._grpc_port = grpc_port
        self._tokens = tokens
        self._push = push
        self._max_body_bytes = max_body_bytes
        self._public_url = public_url
        self._apps: dict[str, Starlette] = {}
        self._lock = anyio.Lock()
        self._stop = anyio.Event()
        self._tasks: TaskGroup | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield
            finally:
                self._tasks = None
                self._stop.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        name = scope["path_params"]["name"]
        try:
            await self._service.sync_registrations()
            registered(self._service, name)
            app = self._apps.get(name) or await self._start(name)
        except ProtocolError as exc:
            await error_response(exc)(scope, receive, send)
            return
        # The agent's app is served as if at /proxy/{name}: its routes match what follows, its card names it.
        root = scope.get("app_root_path", scope.get("root_path", "")) + f"{PROXY_PATH}/{name}"
        path = scope["path"] if scope["path"] != root else root + "/"  # JSON-RPC's POST /proxy/{name}
        await app({**scope, "path": path, "root_path": root, "app_root_path": root}, receive, send)

    async def tenant(self, name: str) -> TaskManager:
        """The TaskManager of the proxied agent ``name``: the gRPC face's tenant of that name."""
        await self._service.sync_registrations()
        registered(self._service, name)
        app = self._apps.get(name) or await self._start(name)
        manager: TaskManager = app.state.task_manager
        return manager

    async def _start(self, name: str) -> Starlette:
        async with self._lock:
            app = self._apps.get(name)
            if app is not None:
                return app
            if self._tasks is None:
                raise ProtocolError(ErrorCode.INTERNAL_ERROR, "the gateway is not running", http_status=503)
            agent = proxied_agent(self._service, name, self._grpc_port)
            path = f"{PROXY_PATH}/{quote(name, safe='')}"
            public_url = self._public_url.rstrip("/") + path if self._public_url else None
            app = create_app(
                agent, token=self._tokens, max_body_bytes=self._max_body_bytes, public_url=public_url, push=self._push
            )
            await self._tasks.start(self._serve, app, agent)
            self._apps[name] = app
            logger.info("proxying the agent %s at %s/%s", name, PROXY_PATH, name)
            return app

    async def _serve(
        self, app: Starlette, agent: ProxiedAgent, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        async with app.router.lifespan_context(app):
            agent.task_manager = app.state.task_manager
            task_status.started()
            try:
                await self._stop.wait()
            finally:
                agent.task_manager = None


def is_proxied_card(path: str) -> bool:
    """``/proxy/{name}/.well-known/agent-card.json`` (or ``agent.json``): public, like the gateway's own card."""
    if not path.startswith(PROXY_PATH + "/"):
        return False
    _name, slash, rest = path[len(PROXY_PATH) + 1 :].partition("/")
    return bool(slash) and "/" + rest in CARD_PATHS
