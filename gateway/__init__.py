"""Switchboard's coordinator: peers by URI, agent-as-tool, swarm runner with handoffs, sessions, event log."""

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
from gateway.agent_result import AgentToolResult
from gateway.agent_tool import AgentTool
from gateway.budget import Budget
from gateway.errors import (
    AgentTaskFailed,
    AgentToolError,
    AgentToolTimeout,
    BudgetExceeded,
    InvalidAgentURI,
    PeerConnectionError,
    PeerHTTPError,
    PeerProtocolError,
    UnknownAgentTool,
)
from gateway.event_log import EventLog, MemoryEventLog, SQLiteEventLog, open_event_log
from gateway.gateway import Gateway
from gateway.peers import Peer
from gateway.uri import parse_agent_uri

__all__ = [
    "AgentTaskFailed",
    "AgentTool",
    "AgentToolError",
    "AgentToolResult",
    "AgentToolTimeout",
    "Budget",
    "BudgetExceeded",
    "EventLog",
    "Gateway",
    "InvalidAgentURI",
    "MemoryEventLog",
    "Peer",
    "PeerConnectionError",
    "PeerHTTPError",
    "PeerProtocolError",
    "SQLiteEventLog",
    "UnknownAgentTool",
    "open_event_log",
    "parse_agent_uri",
    "Agent",
    "AgentHandoffError",
    "FullHistory",
    "Handoff",
    "MemorySessionStore",
    "RemoteAgent",
    "RunResponse",
    "Runner",
    "SQLiteSessionStore",
    "SessionConflictError",
    "SessionStore",
    "StructuredHistory",
    "SummaryHistory",
    "ToolResult",
    "tool",
]
