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
    from gateway.swarm.compat import Swarm as Swarm, run_demo_loop as run_demo_loop
    from gateway.swarm.sessions.redis import RedisSessionStore as RedisSessionStore
    from gateway.tools import ToolResult as ToolResult, tool as tool
    from gateway.uri import parse_agent_uri as parse_agent_uri


__getattr__ = lazy_exports(__name__)
