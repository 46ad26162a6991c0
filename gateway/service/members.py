"""Who is in the service's swarm, as the API changes it: remote agents registered by URL, removed by name.

The Runner's registry is the one record of the swarm: a registered agent is registered
with the Runner, a removed one forgotten by it (gateway/swarm/registry.py). ``Members``
adds what only the service knows: which agents came by URL and may be removed, how to
connect them at start (services start in any order), and which URIs the HTTP API may
name at all (``check_api_target``). A run already going keeps the members it started with.

What the API registers or removes is recorded in the registry store first (the one
record across replicas and restarts: gateway/registrations/), then applied here;
``apply`` brings in what other replicas recorded (service core.py calls it when the
registry's version moved).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from gateway.calls.budget import Budget
from gateway.calls.coordinator import Gateway
from gateway.config.model import check_agent_url
from gateway.errors import AgentToolError, InvalidAgentURI, PeerHTTPError
from gateway.registrations import MemoryRegistryStore, Registration, RegistryStore
from gateway.service.errors import AgentUnreachable, Conflict, Forbidden, NotFound, ServiceError
from gateway.swarm import Agent, RemoteAgent, Runner
from gateway.swarm.member import SwarmMember
from gateway.swarm.registry import AgentRegistry
from gateway.uri import MCPStdioTarget, parse_agent_uri
from protocol import AgentCard

logger = logging.getLogger("gateway.service")

STARTUP_RETRY_PAUSE_S = 0.5
AGENT_NAME_MAX_CHARS = 128

MakeRunner = Callable[[SwarmMember], Runner]


@dataclass(frozen=True)
class RemoteSpec:
    """A remote agent to connect when the service starts (its card is fetched then); ``token`` its credential."""

    url: str
    name: str | None = None
    description: str | None = None
    handoff_from: tuple[str, ...] = ()
    token: str | None = field(default=None, repr=False)
    max_cost_usd: float | None = None


def agent_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an agent of the API (it is a path segment of ``/agents/{name}``), or None."""
    if not name or len(name) > AGENT_NAME_MAX_CHARS:
        return f"must be 1-{AGENT_NAME_MAX_CHARS} characters"
    if name != name.strip() or "/" in name:
        return "may not contain '/' or start or end with spaces"
    return None


def check_api_target(gateway: Gateway, uri: str, field: str) -> None:
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
    if gateway.allowed_hosts.explicit and not gateway.allowed_hosts.allows(uri):
        raise Forbidden(
            f"{field}: {uri!r} is not on an allowed agent host ([security] allowed_agent_hosts: "
            f"{', '.join(gateway.allowed_hosts.patterns) or 'none'})",
            data={"field": field},
        )


class Members:
    """The swarm of a service: started with ``start``, then read and changed through the Runner."""

    def __init__(
        self,
        gateway: Gateway,
        starting_agent: SwarmMember | None,
        *,
        starting_agent_name: str,
        agents: Sequence[SwarmMember],
        remotes: Sequence[RemoteSpec],
        startup_wait_s: float,
        registry: RegistryStore | None = None,
    ) -> None:
        self.gateway = gateway
        self.registry = registry or MemoryRegistryStore()
        self.starting_agent_name = starting_agent.name if starting_agent is not None else starting_agent_name
        self._starting = starting_agent
        self._given = list(agents)
        self._pending = list(remotes)
        self._startup_wait_s = startup_wait_s
        self._by_url: dict[str, RemoteAgent] = {}
        self._applied: dict[str, dict[str, Any]] = {}
        """Agent name -> the registry entry it was built from (registered here, or applied from the store)."""
        self._runner: Runner | None = None

    async def start(self, make_runner: MakeRunner) -> Runner:
        """Connect the remote agents given (retrying while nothing answers yet), then make the one Runner."""
        deadline = anyio.current_time() + self._startup_wait_s
        for spec in self._pending:
            self._given.append(await self._connect_at_start(spec, deadline))
        self._pending = []
        starting = self._starting or self._known().get(self.starting_agent_name)
        if starting is None:
            raise ValueError(f"the starting agent {self.starting_agent_name!r} is not among the agents given")
        runner = make_runner(starting)
        for member in self._given:
            runner.register_agent(member)
        self._starting, self._runner = starting, runner
        return runner

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            raise RuntimeError("the gateway service is not running: use `async with service:` first")
        return self._runner

    @property
    def started(self) -> bool:
        return self._runner is not None

    @property
    def starting_agent(self) -> SwarmMember:
        return self.runner.starting_agent

    def agents(self) -> dict[str, SwarmMember]:
        """Every agent a conversation can reach, by name."""
        return self.runner.agents

    def local_agents(self) -> dict[str, Agent]:
        return {name: member for name, member in self.agents().items() if isinstance(member, Agent)}

    def handoff_sources(self, name: str) -> list[str]:
        """The local agents that can transfer to ``name``."""
        return [agent.name for agent in self.local_agents().values() if any(h.name == name for h in agent.handoffs)]

    def local_agent(self, name: str, field: str) -> Agent:
        """The local agent ``name``, or a 400 saying which body ``field`` named something else."""
        known = self._known()
        member = known.get(name)
        if not isinstance(member, Agent):
            local = sorted(n for n, m in known.items() if isinstance(m, Agent))
            raise ServiceError(
                f"{field} names {name!r}, which is not a local agent (local agents: {', '.join(local) or 'none'})",
                data={"field": field},
            )
        return member

    async def register_remote(
        self,
        url: str,
        *,
        name: str | None = None,
        description: str | None = None,
        handoff_from: Sequence[str] | None = None,
        token: str | None = None,
        max_cost_usd: float | None = None,
    ) -> RemoteAgent:
        """Fetch the card at ``url`` and add the agent; by default the starting agent may transfer to it.

        ``token`` is sent to this agent only; ``max_cost_usd``: what one of its tasks may cost.
        Nothing changes unless everything succeeds.
        """
        try:
            check_agent_url(url)
        except ValueError as exc:
            raise ServiceError(str(exc), data={"field": "url"}) from None
        starting = self.starting_agent
        sources = (
            ([starting.name] if isinstance(starting, Agent) else []) if handoff_from is None else list(handoff_from)
        )
        for source in sources:
            self.local_agent(source, "handoff_from")
        if name is not None:
            self._check_free(name)
        spec = RemoteSpec(url, name, description, tuple(sources), token, max_cost_usd)
        remote = await self._fetch(spec)
        taken = [known for known, remote in self._by_url.items() if remote.uri.rstrip("/") == url.rstrip("/")]
        if taken:  # two names for one service: two transfer tools the model must choose between
            raise Conflict(
                f"the agent at {url} is already registered as {taken[0]!r}; remove it first to register it anew",
                data={"field": "url", "registered_as": taken[0]},
            )
        entry: dict[str, Any] = {
            "url": url,
            "description": description,
            "handoff_from": sources,
            "token": token,
            "max_cost_usd": max_cost_usd,
            "card": remote.card.to_wire(),
        }
        if not await self.registry.register("agent", remote.name, entry):
            raise Conflict(
                f"an agent named {remote.name!r} was registered meanwhile (through another gateway replica); "
                "remove it first or register under another name"
            )
        self._add(remote, spec)
        self._applied[remote.name] = entry
        self.runner.register_agent(remote)
        return remote

    async def remove_agent(self, name: str) -> RemoteAgent:
        """``forget``, recorded in the registry store first, so every replica forgets it, also after a restart."""
        self._removable(name)
        await self.registry.unregister("agent", name)
        return self.forget(name)

    def apply(self, entry: Registration) -> None:
        """Bring an agent registered or removed elsewhere (another replica, an earlier start) into this swarm.

        Built from the entry's card, without a request to the agent. It replaces a remote
        agent of that name (one of the configuration, removed and registered again through
        the API); an entry whose name a local agent holds is skipped with a warning.
        """
        name, data = entry.name, entry.data
        if data is None:
            if name in self._by_url:
                self.forget(name)
            return
        if self._applied.get(name) == data:
            return
        if name in self._by_url:
            self.forget(name)
        if name in self._known():
            logger.warning("the registry's agent %r is not applied: another agent has that name here", name)
            return
        token = data.get("token")
        card = AgentCard.model_validate(data["card"])
        remote = RemoteAgent(
            self.gateway.peer(str(data["url"]), token=token),
            card,
            name=name,
            description=data.get("description"),
            cancel_timeout_s=self.gateway.limits.cancel_timeout_s,
            authenticated=token is not None,
            budget=Budget(data.get("max_cost_usd")),
        )
        local = self.local_agents()
        sources = tuple(source for source in data.get("handoff_from") or [] if source in local)
        spec = RemoteSpec(str(data["url"]), name, data.get("description"), sources, token, data.get("max_cost_usd"))
        self._add(remote, spec)
        self._applied[name] = data
        self.runner.register_agent(remote)

    def forget(self, name: str) -> RemoteAgent:
        """Forget a remote agent registered by URL; local agents stop offering the transfer to it.

        Sessions it held go back to the starting agent at their next turn: the agent is not
        reconnected by its URI, and stays gone until an agent is registered under its name again.
        """
        remote = self._removable(name)
        for agent in self.local_agents().values():
            agent.remove_handoff(name)
        del self._by_url[name]
        self._applied.pop(name, None)
        self.runner.forget(name)
        return remote

    def _removable(self, name: str) -> RemoteAgent:
        """The remote agent ``name`` registered by URL; NotFound or Conflict (saying why) for any other name."""
        remote = self._by_url.get(name)
        if remote is None:
            member = self.agents().get(name)
            if member is not None:
                raise Conflict(
                    f"agent {name!r} {self._how_added(member)}; only remote agents registered by URL "
                    "(POST /agents, or [[agents]] with url in the configuration) can be removed"
                )
            raise NotFound(f"no agent named {name!r} (agents: {', '.join(sorted(self.agents())) or 'none'})")
        if self.starting_agent is remote:
            raise Conflict(f"agent {name!r} is the starting agent; it cannot be removed")
        return remote

    def _how_added(self, member: SwarmMember) -> str:
        if isinstance(member, Agent):
            return "is a local agent (defined in the configuration or given to the service in code)"
        if isinstance(member, RemoteAgent) and not any(m is member for m in self._given):
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
        remote = await self._fetch(spec)
        self._add(remote, spec)
        return remote

    async def _fetch(self, spec: RemoteSpec) -> RemoteAgent:
        """The agent at ``spec.url``, its card fetched and its name checked; nothing changes here yet."""
        try:
            remote = await RemoteAgent.connect(
                spec.url,
                self.gateway,
                name=spec.name,
                description=spec.description,
                token=spec.token,
                budget=Budget(spec.max_cost_usd),
            )
        except AgentToolError as exc:
            status = {"status": exc.status} if isinstance(exc, PeerHTTPError) else {}
            data = {"url": spec.url, "reason": exc.reason, **status}
            raise AgentUnreachable(f"cannot fetch the agent card from {spec.url}: {exc.message}", data=data) from None
        if spec.name is None and (problem := agent_name_problem(remote.name)) is not None:
            raise ServiceError(
                f"the agent card at {spec.url} names the agent {remote.name!r}, which cannot be an agent name here "
                f'(it {problem}); register it under another name: pass "name" in the body',
                data={"field": "name", "card_name": remote.name},
            )
        self._check_free(remote.name)
        for source in spec.handoff_from:
            self.local_agent(source, "handoff_from")
        return remote

    def _add(self, remote: RemoteAgent, spec: RemoteSpec) -> None:
        for source in spec.handoff_from:
            self.local_agent(source, "handoff_from").add_handoff(remote)
        self.gateway.trust(spec.url)
        self._by_url[remote.name] = remote

    def _known(self) -> dict[str, SwarmMember]:
        """Every agent known so far, also before the Runner exists (while connecting at start)."""
        if self._runner is not None:
            return self._runner.agents
        known = [m for m in [self._starting, *self._given] if m is not None]
        if not known:
            return {}
        registry = AgentRegistry(known[0])
        for member in known[1:]:
            registry.register(member)
        return registry.snapshot()

    def _check_free(self, name: str) -> None:
        if name in self._known():
            raise Conflict(
                f"an agent named {name!r} is already registered; remove it first or register under another name"
            )
