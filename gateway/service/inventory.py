"""What a started gateway service runs: each agent and tool, where it came from, and whether it answered at start.

The configuration file is not the whole truth: the registry store adds what the API
registered and takes away what it removed, at every start and on every replica. The
operator reads this list (``switchboard gateway`` prints it once the service is up) to
know what will answer, not what the file says. A remote agent of the file was reached at
start (its card fetched) or the gateway would not have started; one restored from the
registry, and every agent tool behind a URL, is asked for its card now, in parallel and
within the peers' connect timeout, so a dead one is said, not restored silently. A tool
behind a command (``mcp+stdio:``) is not started for that.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import anyio

from gateway.peers.base import Peer
from gateway.service.core import GatewayService
from gateway.swarm import Agent, RemoteAgent
from gateway.swarm.member import SwarmMember
from gateway.uri import MCPStdioTarget


class Origin(enum.Enum):
    """Where an entry came from."""

    FILE = "the configuration"
    REGISTRY = "the registry"


class Reply(enum.Enum):
    """Whether a remote entry answered when the service started."""

    LOCAL = "runs here"
    ANSWERED = "answered at start"
    SILENT = "did not answer at start"
    COMMAND = "a command, started on first call"


@dataclass(frozen=True)
class Entry:
    kind: str
    """``agent`` or ``tool``."""
    name: str
    where: str
    """``local`` or the URI it is reached at."""
    origin: Origin
    reply: Reply
    starting: bool = False


@dataclass(frozen=True)
class Inventory:
    entries: tuple[Entry, ...]
    removed: tuple[str, ...]
    """Names the API removed (kept as removals in the registry) that do not run now."""


async def take_inventory(service: GatewayService) -> Inventory:
    """The running agents and tools of the started ``service``, asking each unconfirmed remote one for its card."""
    recorded = await service.registry.entries()
    registered = {(entry.kind, entry.name) for entry in recorded if entry.data is not None}
    removals = [entry.name for entry in recorded if entry.data is None]
    agents = service.members.agents()
    tools = service.gateway.tools
    replies: dict[tuple[str, str], Reply] = {}
    within_s = service.gateway.limits.connect_timeout_s
    async with anyio.create_task_group() as group:
        for name, member in agents.items():
            if isinstance(member, RemoteAgent) and ("agent", name) in registered:
                group.start_soon(_ask, member.peer, ("agent", name), replies, within_s)
        for name, tool in tools.items():
            if not isinstance(tool.target, MCPStdioTarget):
                peer = service.gateway.peer(tool.target, token=tool.token)
                group.start_soon(_ask, peer, ("tool", name), replies, within_s)
    starting = service.starting_agent
    entries = [
        Entry(
            "agent",
            name,
            _agent_where(member),
            Origin.REGISTRY if ("agent", name) in registered else Origin.FILE,
            replies.get(("agent", name), Reply.LOCAL if isinstance(member, Agent) else Reply.ANSWERED),
            starting=member is starting,
        )
        for name, member in agents.items()
    ]
    entries += [
        Entry(
            "tool",
            name,
            tool.agent,
            Origin.REGISTRY if ("tool", name) in registered else Origin.FILE,
            replies.get(("tool", name), Reply.COMMAND),
        )
        for name, tool in tools.items()
    ]
    running = {(entry.kind, entry.name) for entry in entries}
    removed = tuple(sorted({name for name in removals if not running & {("agent", name), ("tool", name)}}))
    return Inventory(tuple(entries), removed)


def _agent_where(member: SwarmMember) -> str:
    if isinstance(member, RemoteAgent):
        return member.uri
    return "local"


async def _ask(peer: Peer, key: tuple[str, str], replies: dict[tuple[str, str], Reply], within_s: float) -> None:
    """Whether ``peer`` serves its card within ``within_s``; the answer is written into ``replies``."""
    replies[key] = Reply.SILENT
    with anyio.move_on_after(within_s):
        try:
            await peer.card()
        except Exception:  # whatever went wrong, it did not answer; the list says so and the start goes on
            return
        replies[key] = Reply.ANSWERED


__all__ = ["Entry", "Inventory", "Origin", "Reply", "take_inventory"]
