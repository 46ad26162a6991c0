"""Switchboard's coordinator: peers by URI, agent-as-tool, swarm runner with handoffs, sessions, event log."""

from gateway.agent_result import AgentToolResult
from gateway.agent_tool import AgentTool
from gateway.budget import Budget
from gateway.config import GatewayConfig, load_config
from gateway.errors import (
    AgentTaskFailed,
    ConfigError,
    AgentToolError,
    AgentToolTimeout,
    BudgetExceeded,
    InvalidAgentURI,
    PeerConnectionError,
    PeerHTTPError,
    PeerProtocolError,
    PeerRedirect,
    PoolExhausted,
    UnknownAgentTool,
)
from gateway.allowed_hosts import HostAllowlist
from gateway.event_log import EventLog, MemoryEventLog, SQLiteEventLog, open_event_log
from gateway.events import Event, EventType
from gateway.gateway import Gateway
from gateway.peers import Peer, PeerLimits
from gateway.service import GatewayService, create_gateway_app
from gateway.swarm import (
    Agent,
    AgentHandoffError,
    FullHistory,
    Handoff,
    MemorySessionStore,
    RemoteAgent,
    Runner,
    RunResponse,
    SessionConflictError,
    SessionStore,
    SQLiteSessionStore,
    StructuredHistory,
    SummaryHistory,
)
from gateway.tools import ToolResult, tool
from gateway.uri import parse_agent_uri

__all__ = [
    "Agent",
    "AgentHandoffError",
    "AgentTaskFailed",
    "AgentTool",
    "AgentToolError",
    "AgentToolResult",
    "AgentToolTimeout",
    "Budget",
    "BudgetExceeded",
    "ConfigError",
    "Event",
    "EventLog",
    "EventType",
    "FullHistory",
    "Gateway",
    "GatewayConfig",
    "GatewayService",
    "Handoff",
    "HostAllowlist",
    "InvalidAgentURI",
    "MemoryEventLog",
    "MemorySessionStore",
    "Peer",
    "PeerConnectionError",
    "PeerHTTPError",
    "PeerLimits",
    "PeerProtocolError",
    "PeerRedirect",
    "PoolExhausted",
    "RemoteAgent",
    "RunResponse",
    "Runner",
    "SQLiteEventLog",
    "SQLiteSessionStore",
    "SessionConflictError",
    "SessionStore",
    "StructuredHistory",
    "SummaryHistory",
    "ToolResult",
    "UnknownAgentTool",
    "create_gateway_app",
    "load_config",
    "open_event_log",
    "parse_agent_uri",
    "tool",
]
