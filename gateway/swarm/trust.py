"""What a remote agent's transfer request may name: the gateway does not trust remote agents with its host.

A remote agent may name registered agents (and members already found by URI) freely. An
``mcp+stdio:`` URI would start a process here, so it is never resolved for a remote
agent; a new ``http(s)``/MCP URI (a connection carrying the conversation) only when the
runner resolves URIs at all, and only to a host the gateway allows (nothing is contacted
otherwise).
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.errors import InvalidAgentURI
from gateway.swarm.member import SwarmMember
from gateway.swarm.registry import find_by_name
from gateway.uri import LocalTarget, MCPStdioTarget, parse_agent_uri


def forbidden_for_remote(
    target: str,
    agents: dict[str, SwarmMember],
    *,
    known_at: Callable[[str], SwarmMember | None],
    resolve_uris: bool,
    host_allowed: Callable[[str], bool],
) -> tuple[str, str] | None:
    """Why a target a remote agent named may not be resolved, as (cause, detail); None when it may."""
    if find_by_name(agents, target) is not None:
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
    if isinstance(parsed, LocalTarget) and find_by_name(agents, parsed.name) is not None:
        return None
    if known_at(target) is not None:
        return None
    if not resolve_uris:
        return "forbidden_target", "this swarm resolves transfer targets by registered name only (resolve_uris=False)"
    if not host_allowed(target):
        return "host_not_allowed", f"{target!r} is not on a host the gateway may connect to (allowed_agent_hosts)"
    return None
