"""Swarm handoffs: agents that transfer a conversation to peers, in-process and across services."""

from gateway.errors import AgentHandoffError, SessionConflictError, SessionNotFound, SwarmError
from gateway.swarm.admission import HANDOFF_LIMIT_MESSAGE
from gateway.swarm.agent import Agent
from gateway.swarm.fallback import CURRENT, ESCALATION_MESSAGE, HUMAN, Fallback
from gateway.swarm.handoff import Handoff, TransferTool, specialty_of, transfer_tools
from gateway.swarm.history_policy import (
    FullHistory,
    HandoffPayload,
    HistoryPolicy,
    StructuredHistory,
    SummaryHistory,
    handoff_payload,
)
from gateway.swarm.local import NOT_RUN_MESSAGE, TOOL_LIMIT_MESSAGE
from gateway.swarm.member import SwarmMember
from gateway.swarm.registry import AgentRegistry, TargetPolicy
from gateway.swarm.remote import RemoteAgent, RemoteReply
from gateway.swarm.router import RouteDecision, SemanticRouter
from gateway.swarm.runner import Runner
from gateway.swarm.sessions import HandoffRecord, MemorySessionStore, Session, SessionStore, SQLiteSessionStore
from gateway.swarm.turn import RunOptions, RunResponse, TurnScope, current_turn

__all__ = [
    "CURRENT",
    "ESCALATION_MESSAGE",
    "HANDOFF_LIMIT_MESSAGE",
    "HUMAN",
    "NOT_RUN_MESSAGE",
    "TOOL_LIMIT_MESSAGE",
    "Agent",
    "AgentHandoffError",
    "AgentRegistry",
    "Fallback",
    "FullHistory",
    "Handoff",
    "HandoffPayload",
    "HandoffRecord",
    "HistoryPolicy",
    "MemorySessionStore",
    "RemoteAgent",
    "RemoteReply",
    "RouteDecision",
    "RunOptions",
    "RunResponse",
    "Runner",
    "SQLiteSessionStore",
    "SemanticRouter",
    "Session",
    "SessionConflictError",
    "SessionNotFound",
    "SessionStore",
    "StructuredHistory",
    "SummaryHistory",
    "SwarmError",
    "SwarmMember",
    "TargetPolicy",
    "TransferTool",
    "TurnScope",
    "current_turn",
    "handoff_payload",
    "specialty_of",
    "transfer_tools",
]
