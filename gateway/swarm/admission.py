"""Who may receive a transfer: how a named target is found this turn, and the rules that may refuse it.

A target is found by name in the turn's snapshot of the registry, else as the policy
allows (registry.py ``TargetPolicy``): by URI, or an agent object a local tool returned.

The gateway does not trust remote agents with its host. A remote agent may name
registered agents (and members already found by URI) freely. An ``mcp+stdio:`` URI would
start a process here, so it is never resolved for a remote agent; a new ``http(s)``/MCP
URI (a connection carrying the conversation) only when the policy connects URIs at all,
and only to a host the gateway allows (nothing is contacted otherwise).

A transfer to a target found is then refused when the target already holds the
conversation, when transfers are over for the turn (an earlier one was refused), past
``max_handoffs_per_turn``, or when it would repeat a cycle of two or more agents
(A -> B -> A -> B) even below the limit. A refused transfer ends transfers for the turn;
the agent is told why and answers, unless the fallback takes the conversation (fallback.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gateway.errors import InvalidAgentURI
from gateway.swarm.handoff import Handoff
from gateway.swarm.member import SwarmMember
from gateway.swarm.registry import AgentRegistry, ConnectURI, TargetPolicy, find_by_name
from gateway.uri import LocalTarget, MCPStdioTarget, parse_agent_uri

HANDOFF_LIMIT_MESSAGE = "Maximum agent transfers exceeded for a single turn."
ANSWER_NOW = "Answer the user now, without calling tools or transferring."


@dataclass(frozen=True)
class Targets:
    """How this turn finds the agent a transfer names: the registry, its snapshot, the policy, the allowed hosts."""

    registry: AgentRegistry
    agents: dict[str, SwarmMember]
    policy: TargetPolicy
    connect: ConnectURI | None
    host_allowed: Callable[[str], bool]

    async def named(self, target: str) -> SwarmMember:
        """The member ``target`` names (by name or URI); AgentHandoffError when none."""
        return await self.registry.resolve(target, self.agents, self.connect)

    async def asked_for(self, request: Handoff | SwarmMember) -> tuple[SwarmMember, Handoff]:
        """The agent a local tool's transfer names: by name (or URI), or the agent object it returned."""
        if isinstance(request, Handoff):
            return await self.named(request.target_agent_name), request
        member = self.registry.adopt(request, self.agents, self.policy)
        return member, Handoff(member.name)

    def forbidden_for_remote(self, target: str) -> tuple[str, str] | None:
        """Why a target a remote agent named may not be resolved, as (cause, detail); None when it may."""
        if find_by_name(self.agents, target) is not None:
            return None
        try:
            parsed = parse_agent_uri(target)
        except InvalidAgentURI:
            return None  # not a URI: resolving reports the unknown name
        if isinstance(parsed, MCPStdioTarget):
            return (
                "spawns_process",
                "a remote agent may not hand off to an mcp+stdio: target (it would start a process on the gateway)",
            )
        if isinstance(parsed, LocalTarget) and find_by_name(self.agents, parsed.name) is not None:
            return None
        if self.registry.known_at(target, self.agents) is not None:
            return None
        if not self.policy.connect_uris:
            return (
                "forbidden_target",
                "this swarm resolves transfer targets by registered name only (resolve_uris=False)",
            )
        if not self.host_allowed(target):
            return "host_not_allowed", f"{target!r} is not on a host the gateway may connect to (allowed_agent_hosts)"
        return None


@dataclass(frozen=True)
class Refusal:
    """Why a transfer was refused: the ``cause`` recorded, the ``message`` the agent reads, the ``cycle`` if one."""

    cause: str
    message: str
    cycle: list[str] | None = None


def refusal(
    source: str, target: str, *, path: list[str], transfers_blocked: bool, max_handoffs_per_turn: int
) -> Refusal | None:
    """None when ``source`` may hand the conversation to ``target`` now; ``path`` is the turn's agents so far."""
    if target == source:
        return Refusal("self", f"{source!r} already holds the conversation; no transfer needed.")
    if transfers_blocked:
        return Refusal("transfers_blocked", f"Transfers are over for this turn. {ANSWER_NOW}")
    if len(path) - 1 >= max_handoffs_per_turn:
        return Refusal("max_handoffs_per_turn", HANDOFF_LIMIT_MESSAGE)
    cycle = repeated_cycle([*path, target])
    if cycle is not None:
        loop = " -> ".join(cycle)
        message = f"Transfer to {target!r} refused: the conversation goes in circles ({loop}). {ANSWER_NOW}"
        return Refusal("cycle", message, cycle)
    return None


def repeated_cycle(path: list[str]) -> list[str] | None:
    """The tail of ``path`` when it repeats a cycle of two or more agents (A B A B), else None."""
    for size in range(2, len(path) // 2 + 1):
        if path[-size:] == path[-2 * size : -size]:
            return path[-2 * size :]
    return None
