"""Session stores for the swarm runner: in-memory and SQLite, with versioned compare-and-set."""

from .base import HandoffRecord, Session, SessionStore
from .memory import MemorySessionStore
from .sqlite import SQLiteSessionStore

__all__ = ["HandoffRecord", "MemorySessionStore", "SQLiteSessionStore", "Session", "SessionStore"]
