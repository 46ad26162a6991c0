"""Switchboard's coordinator: peers by URI, agent-as-tool, swarm runner with handoffs, sessions, event log.

The names below are imported on first use (PEP 562), so ``import gateway`` and the
``switchboard`` command start fast and load, say, the MCP SDK only when an MCP target is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.lazy import lazy_exports

if TYPE_CHECKING:
    from gateway.calls.budget import Budget as Budget
    from gateway.calls.coordinator import Gateway as Gateway
    from gateway.calls.result import AgentToolResult as AgentToolResult
    from gateway.calls.tool import AgentTool as AgentTool, AgentToolFunction as AgentToolFunction
    from gateway.config.load import load_config as load_config
    from gateway.config.model import GatewayConfig as GatewayConfig
    from gateway.errors import (
        AgentHandoffError as AgentHandoffError,
        AgentTaskFailed as AgentTaskFailed,
        AgentToolError as AgentToolError,
        AgentToolTimeout as AgentToolTimeout,
        BudgetExceeded as BudgetExceeded,
        ConfigError as ConfigError,
        InvalidAgentURI as InvalidAgentURI,
        PeerConnectionError as PeerConnectionError,
        PeerHTTPError as PeerHTTPError,
        PeerProtocolError as PeerProtocolError,
        PeerRedirect as PeerRedirect,
        PeerRPCError as PeerRPCError,
        PoolExhausted as PoolExhausted,
        RunClosedError as RunClosedError,
        SessionBusy as SessionBusy,
        SessionConflictError as SessionConflictError,
        SessionLockLost as SessionLockLost,
        UnknownAgentTool as UnknownAgentTool,
    )
    from gateway.event_log import (
        EventLog as EventLog,
        MemoryEventLog as MemoryEventLog,
        SQLiteEventLog as SQLiteEventLog,
        open_event_log as open_event_log,
    )
    from gateway.event_log.redis import RedisEventLog as RedisEventLog
    from gateway.peers.allowed_hosts import HostAllowlist as HostAllowlist
    from gateway.peers.base import Peer as Peer
    from gateway.peers.http_client import PeerHttpClient as PeerHttpClient
    from gateway.peers.limits import PeerLimits as PeerLimits
    from gateway.recording.events import Event as Event, EventType as EventType
    from gateway.registrations import (
        MemoryRegistryStore as MemoryRegistryStore,
        RegistryStore as RegistryStore,
        SQLiteRegistryStore as SQLiteRegistryStore,
        open_registry as open_registry,
    )
    from gateway.registrations.redis import RedisRegistryStore as RedisRegistryStore
    from gateway.service import GatewayService as GatewayService, create_gateway_app as create_gateway_app
    from gateway.swarm import (
        Agent as Agent,
        FullHistory as FullHistory,
        Handoff as Handoff,
        MemorySessionStore as MemorySessionStore,
        RemoteAgent as RemoteAgent,
        Runner as Runner,
        RunResponse as RunResponse,
        SessionStore as SessionStore,
        SQLiteSessionStore as SQLiteSessionStore,
        StructuredHistory as StructuredHistory,
        SummaryHistory as SummaryHistory,
    )
    from gateway.swarm.sessions.redis import RedisSessionStore as RedisSessionStore
    from gateway.tools import ToolResult as ToolResult, tool as tool
    from gateway.uri import parse_agent_uri as parse_agent_uri

_EXPORTS = {
    "Agent": "gateway.swarm",
    "AgentHandoffError": "gateway.errors",
    "AgentTaskFailed": "gateway.errors",
    "AgentTool": "gateway.calls.tool",
    "AgentToolError": "gateway.errors",
    "AgentToolFunction": "gateway.calls.tool",
    "AgentToolResult": "gateway.calls.result",
    "AgentToolTimeout": "gateway.errors",
    "Budget": "gateway.calls.budget",
    "BudgetExceeded": "gateway.errors",
    "ConfigError": "gateway.errors",
    "Event": "gateway.recording.events",
    "EventLog": "gateway.event_log",
    "EventType": "gateway.recording.events",
    "FullHistory": "gateway.swarm",
    "Gateway": "gateway.calls.coordinator",
    "GatewayConfig": "gateway.config.model",
    "GatewayService": "gateway.service",
    "Handoff": "gateway.swarm",
    "HostAllowlist": "gateway.peers.allowed_hosts",
    "InvalidAgentURI": "gateway.errors",
    "MemoryEventLog": "gateway.event_log",
    "MemoryRegistryStore": "gateway.registrations",
    "MemorySessionStore": "gateway.swarm",
    "Peer": "gateway.peers.base",
    "PeerConnectionError": "gateway.errors",
    "PeerHTTPError": "gateway.errors",
    "PeerHttpClient": "gateway.peers.http_client",
    "PeerRPCError": "gateway.errors",
    "PeerLimits": "gateway.peers.limits",
    "PeerProtocolError": "gateway.errors",
    "PeerRedirect": "gateway.errors",
    "PoolExhausted": "gateway.errors",
    "RedisEventLog": "gateway.event_log.redis",
    "RedisRegistryStore": "gateway.registrations.redis",
    "RedisSessionStore": "gateway.swarm.sessions.redis",
    "RegistryStore": "gateway.registrations",
    "RemoteAgent": "gateway.swarm",
    "RunClosedError": "gateway.errors",
    "RunResponse": "gateway.swarm",
    "Runner": "gateway.swarm",
    "SQLiteEventLog": "gateway.event_log",
    "SQLiteRegistryStore": "gateway.registrations",
    "SQLiteSessionStore": "gateway.swarm",
    "SessionBusy": "gateway.errors",
    "SessionConflictError": "gateway.errors",
    "SessionLockLost": "gateway.errors",
    "SessionStore": "gateway.swarm",
    "StructuredHistory": "gateway.swarm",
    "SummaryHistory": "gateway.swarm",
    "ToolResult": "gateway.tools",
    "UnknownAgentTool": "gateway.errors",
    "create_gateway_app": "gateway.service",
    "load_config": "gateway.config.load",
    "open_event_log": "gateway.event_log",
    "open_registry": "gateway.registrations",
    "parse_agent_uri": "gateway.uri",
    "tool": "gateway.tools",
}

__all__ = sorted(_EXPORTS)  # noqa: PLE0605 - the names are listed once, above

__getattr__ = lazy_exports(__name__, _EXPORTS)
