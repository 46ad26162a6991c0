"""Session stores for the swarm runner: in-memory and SQLite, with versioned compare-and-set."""

from gateway.swarm.sessions.base import HandoffRecord, Session, SessionStore
from gateway.swarm.sessions.memory import MemorySessionStore
from gateway.swarm.sessions.sqlite import SQLiteSessionStore

__all__ = ["HandoffRecord", "MemorySessionStore", "SQLiteSessionStore", "Session", "SessionStore"]
