"""Swarm handoffs: agents that transfer a conversation to peers, in-process and across services."""

from gateway.errors import AgentHandoffError, SessionConflictError, SessionNotFound, SwarmError

from .agent import Agent
from .handoff import Handoff, TransferTool, specialty_of, transfer_tools
from .history_policy import FullHistory, HistoryPolicy, StructuredHistory, SummaryHistory, handoff_payload
from .member import SwarmMember
from .registry import AgentRegistry
from .remote import RemoteAgent, RemoteReply
from .runner import HANDOFF_LIMIT_MESSAGE, TOOL_LIMIT_MESSAGE, Runner
from .sessions import HandoffRecord, MemorySessionStore, Session, SessionStore, SQLiteSessionStore
from .turn import RunResponse

__all__ = [
    "HANDOFF_LIMIT_MESSAGE",
    "TOOL_LIMIT_MESSAGE",
    "Agent",
    "AgentHandoffError",
    "AgentRegistry",
    "FullHistory",
    "Handoff",
    "HandoffRecord",
    "HistoryPolicy",
    "MemorySessionStore",
    "RemoteAgent",
    "RemoteReply",
    "RunResponse",
    "Runner",
    "SQLiteSessionStore",
    "Session",
    "SessionConflictError",
    "SessionNotFound",
    "SessionStore",
    "StructuredHistory",
    "SummaryHistory",
    "SwarmError",
    "SwarmMember",
    "TransferTool",
    "handoff_payload",
    "specialty_of",
    "transfer_tools",
]
