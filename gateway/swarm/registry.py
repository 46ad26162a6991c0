"""Which agents a runner can hand a conversation to, and how a target name is resolved.

The registry is recomputed at the start of every turn from the starting agent, the
registered agents and everything reachable through their handoffs, so ``add_handoff``
after the runner was built still counts. A target resolves by exact name, then by its
sanitized form when that is unambiguous (a remote agent may say "billing" for
"Billing"), then, if it is a URI, by scheme through gateway/uri.py: ``local://NAME`` is
first a swarm agent named NAME; the URI of a member already known (registered by that URL,
or found by it before) is that member; anything else (like ``http(s)://`` and MCP URIs) a
peer of the gateway, wrapped as a RemoteAgent.

``forget(name)`` takes an agent out (a registered one or one found by URI): the name no
longer resolves, the snapshot leaves it out even where a handoff still points at it, and
its URI is not connected again, until an agent with that name is registered anew.

How a target the registry does not hold yet is found is the runner's ``TargetPolicy``: a
URI is connected to (``connect_uris``), and an agent object a local tool returns (OpenAI
swarm's way to transfer) is ``adopt``-ed (``adopt_agents``): one the registry does not know
yet is registered then, so the session's next turns find it by name; a later object with
the name of an adopted one replaces it (tools that build their agent on each call); the
``MAX_DYNAMIC_AGENTS`` most recent are kept. A name held by an agent registered otherwise
stays that agent's. Names from remote agents' answers are never adopted: they resolve by
name or URI (``resolve``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway import defaults
from gateway.errors import AgentHandoffError, AgentToolError, InvalidAgentURI
from gateway.swarm.member import SwarmMember
from gateway.uri import A2AHttpTarget, AgentTarget, LocalTarget, parse_agent_uri
from protocol.handoff_names import sanitize_agent_name

ConnectURI = Callable[[str], Awaitable[SwarmMember]]


@dataclass(frozen=True)
class TargetPolicy:
    """How a transfer target that no agent registered under its name is found.

    ``connect_uris``: a target named by URI is connected to (through the gateway, on a host
    it allows); off, transfers name registered agents only, which keeps a remote agent from
    sending the conversation anywhere new. ``adopt_agents``: an agent object a local tool
    returns is registered then (OpenAI swarm's way); off, it must be registered already.
    """

    connect_uris: bool = True
    adopt_agents: bool = True

    @classmethod
    def of(cls, policy: TargetPolicy | None, *, resolve_uris: bool | None, dynamic_agents: bool | None) -> TargetPolicy:
        """The policy ``Runner(targets=...)`` gives, or the one its ``resolve_uris``/``dynamic_agents`` keywords say."""
        if policy is not None and (resolve_uris is not None or dynamic_agents is not None):
            raise ValueError("give Runner(targets=...) or resolve_uris=/dynamic_agents=, not both")
        if policy is not None:
            return policy
        return cls(
            connect_uris=True if resolve_uris is None else resolve_uris,
            adopt_agents=True if dynamic_agents is None else dynamic_agents,
        )


class AgentRegistry:
    """The starting agent, the registered ones and the members found by URI; see the module docstring."""

    def __init__(self, starting_agent: SwarmMember) -> None:
        self.starting_agent = starting_agent
        self._registered: list[SwarmMember] = []
        self._adopted: dict[str, SwarmMember] = {}
        self._by_uri: dict[str, SwarmMember] = {}
        self._forgotten_names: set[str] = set()
        self._forgotten_uris: set[str] = set()

    def register(self, member: SwarmMember) -> None:
        """Make ``member`` (and whatever it hands off to) a valid target.

        The check comes first: a refused member (a name clash) leaves the registry as it was.
        """
        if any(m is member for m in self._registered):
            return
        forgotten = (self._forgotten_names, self._forgotten_uris)
        self._forgotten_names = self._forgotten_names - {member.name}
        self._forgotten_uris = self._forgotten_uris - {getattr(member, "uri", None)}
        try:
            self._collect([*self._roots(), member])
        except ValueError:
            self._forgotten_names, self._forgotten_uris = forgotten
            raise
        self._registered.append(member)

    def adopt(self, member: SwarmMember, agents: dict[str, SwarmMember], policy: TargetPolicy) -> SwarmMember:
        """``member``, a local tool's transfer target: the agent known under its name, or adopted now.

        An adopted agent (and what it hands off to) joins ``agents``; AgentHandoffError
        when it may not be (the policy does not adopt agents, or its name is another agent's).
        """
        known = agents.get(member.name)
        if known is member:
            return member
        held = known is not None and self._adopted.get(member.name) is not known
        if not policy.adopt_agents or held:
            why = "another agent has that name" if held else "dynamic agents are off (Runner(dynamic_agents=False))"
            raise AgentHandoffError(
                f"handoff target agent {member.name!r} is not registered with the Runner ({why}); add it to some "
                "agent's handoffs or call runner.register_agent",
                target=member.name,
            )
        adopted = {**{n: m for n, m in self._adopted.items() if n != member.name}, member.name: member}
        while len(adopted) > defaults.MAX_DYNAMIC_AGENTS:
            del adopted[next(iter(adopted))]
        forgotten = self._forgotten_names
        self._forgotten_names = forgotten - {member.name}
        try:
            snapshot = self._collect(
                [self.starting_agent, *self._registered, *adopted.values(), *self._by_uri.values()]
            )
        except ValueError as exc:
            self._forgotten_names = forgotten
            raise AgentHandoffError(f"cannot hand off to agent {member.name!r}: {exc}", target=member.name) from None
        self._adopted = adopted
        agents.update(snapshot)
        return member

    def forget(self, name: str) -> None:
        """Take the agent named ``name`` out (see the module docstring); unknown names are a no-op."""
        if name == self.starting_agent.name:
            raise ValueError(f"{name!r} is the starting agent; it cannot be forgotten")
        self._adopted.pop(name, None)
        for member in self._registered:
            if member.name == name and isinstance(uri := getattr(member, "uri", None), str):
                self._forgotten_uris.add(uri)
        self._registered = [m for m in self._registered if m.name != name]
        for uri, member in list(self._by_uri.items()):
            if member.name == name:
                self._forgotten_uris.add(uri)
                del self._by_uri[uri]
        self._forgotten_names.add(name)

    def uri_found(self, member: SwarmMember) -> str | None:
        """The URI ``member`` was found by (a transfer to a URI), or None for an agent registered by name."""
        return next((uri for uri, found in self._by_uri.items() if found is member), None)

    def is_forgotten(self, name: str | None, uri: str | None = None) -> bool:
        """True when ``name`` (or ``uri``) belongs to an agent taken out with ``forget``."""
        return name in self._forgotten_names or (uri is not None and uri in self._forgotten_uris)

    def known_at(self, uri: str, agents: dict[str, SwarmMember]) -> SwarmMember | None:
        """The member already known at ``uri`` (found there before, or registered by that URL): no new connection."""
        if uri in self._by_uri:
            return self._by_uri[uri]
        try:
            parsed = parse_agent_uri(uri)
        except InvalidAgentURI:
            return None
        same = [member for member in agents.values() if _same_uri(getattr(member, "uri", None), parsed)]
        return same[0] if len(same) == 1 else None

    def snapshot(self) -> dict[str, SwarmMember]:
        """Name -> member for every known agent; two different agents with one name is an error."""
        return self._collect(self._roots())

    def _roots(self) -> list[SwarmMember]:
        return [self.starting_agent, *self._registered, *self._adopted.values(), *self._by_uri.values()]

    def _collect(self, roots: list[SwarmMember]) -> dict[str, SwarmMember]:
        agents: dict[str, SwarmMember] = {}
        pending = list(roots)
        while pending:
            member = pending.pop(0)
            known = agents.get(member.name)
            if known is member or (member is not self.starting_agent and member.name in self._forgotten_names):
                continue
            if known is not None:
                raise ValueError(
                    f"two different agents are named {member.name!r}; agent names must be unique in a swarm"
                )
            agents[member.name] = member
            pending.extend(member.handoffs)
        return agents

    async def resolve(self, target: str, agents: dict[str, SwarmMember], connect: ConnectURI | None) -> SwarmMember:
        """The member a transfer names (one found by URI joins ``agents``); AgentHandoffError when none."""
        found = find_by_name(agents, target)
        if found is not None:
            return found
        return await self._resolve_uri(target, agents, connect)

    async def _resolve_uri(
        self, target: str, agents: dict[str, SwarmMember], connect: ConnectURI | None
    ) -> SwarmMember:
        known = ", ".join(sorted(agents)) or "none"
        try:
            parsed = parse_agent_uri(target)
        except InvalidAgentURI:
            raise AgentHandoffError(
                f"handoff target agent {target!r} is not registered with the Runner (known: {known})", target=target
            ) from None
        if isinstance(parsed, LocalTarget) and (found := find_by_name(agents, parsed.name)) is not None:
            return found
        member = self.known_at(target, agents)
        if member is not None:
            return member
        if target in self._forgotten_uris:
            raise AgentHandoffError(f"handoff target {target!r} was removed from the swarm", target=target)
        if connect is None:
            raise AgentHandoffError(
                f"cannot hand off to {target!r}: resolving agent URIs needs Runner(gateway=...) and resolve_uris=True",
                target=target,
            )
        try:
            member = await connect(target)
        except AgentToolError as exc:
            raise AgentHandoffError(f"cannot reach handoff target {target!r}: {exc}", target=target) from exc
        if member.name in self._forgotten_names:
            raise AgentHandoffError(
                f"{target!r} is the agent {member.name!r}, which was removed from the swarm", target=target
            )
        clash = agents.get(member.name)
        if clash is not None and clash is not member:
            raise AgentHandoffError(
                f"{target!r} calls itself {member.name!r}, the name of another agent", target=target
            )
        self._by_uri[target] = member
        agents[member.name] = member
        return member


def _same_uri(uri: object, target: AgentTarget) -> bool:
    """Whether a member's URI names the same agent as ``target`` (a trailing slash or letter case aside)."""
    if not isinstance(uri, str):
        return False
    try:
        other = parse_agent_uri(uri)
    except InvalidAgentURI:
        return False
    return _identity(other) == _identity(target)


def _identity(target: AgentTarget) -> tuple[str, ...]:
    if isinstance(target, A2AHttpTarget):
        return ("http", target.base_url.lower())
    return (type(target).__name__, target.uri)


def find_by_name(agents: dict[str, SwarmMember], name: str) -> SwarmMember | None:
    """Exact name, else the only agent whose sanitized name matches."""
    if name in agents:
        return agents[name]
    wanted = sanitize_agent_name(name)
    matches = [m for n, m in agents.items() if sanitize_agent_name(n) == wanted]
    return matches[0] if len(matches) == 1 else None
