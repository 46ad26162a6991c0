"""SQLite sessions: the embedded default that survives a restart.

One row per session (JSON state plus version). Compare-and-set is a single UPDATE ...
WHERE version = ?, so two processes sharing the file cannot overwrite each other.
Calls go through agent_server's SQLiteDatabase: one connection, one call at a time, in the
database's own thread.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import orjson

from agent_server.stores import SQLiteDatabase
from gateway.errors import SessionConflictError
from gateway.swarm.sessions.base import Session, SessionStore

_SCHEMA = """
CREATE TABLE IF NOT EXISTS swarm_sessions (
    id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    state BLOB NOT NULL,
    updated_ms INTEGER NOT NULL
)
"""


class SQLiteSessionStore(SessionStore):
    def __init__(self, path: str | Path, *, busy_timeout_s: float = 5.0) -> None:
        super().__init__()
        self.path = str(path)
        self._db = SQLiteDatabase(path, schema=_SCHEMA, what="session store", busy_timeout_s=busy_timeout_s)

    async def load(self, session_id: str) -> Session:
        row = await self._db.run(_select, session_id)
        if row is None:
            return Session(id=session_id)
        version, state = row
        return Session.from_state(session_id, version, orjson.loads(state))

    async def save(self, session: Session) -> Session:
        state = session.state_json("SQLite sessions")
        await self._db.run(_compare_and_set, session.id, session.version, state)
        session.version += 1
        return session

    async def delete(self, session_id: str) -> None:
        await self._db.run(_delete, session_id)

    async def close(self) -> None:
        await self._db.aclose()


def _select(conn: sqlite3.Connection, session_id: str) -> tuple[int, bytes] | None:
    row = conn.execute("SELECT version, state FROM swarm_sessions WHERE id = ?", (session_id,)).fetchone()
    return (int(row[0]), bytes(row[1])) if row else None


def _compare_and_set(conn: sqlite3.Connection, session_id: str, expected: int, state: bytes) -> None:
    now = time.time_ns() // 1_000_000
    if expected == 0:
        cursor = conn.execute(
            "INSERT INTO swarm_sessions (id, version, state, updated_ms) VALUES (?, 1, ?, ?) "
            "ON CONFLICT(id) DO NOTHING",
            (session_id, state, now),
        )
    else:
        cursor = conn.execute(
            "UPDATE swarm_sessions SET version = version + 1, state = ?, updated_ms = ? WHERE id = ? AND version = ?",
            (state, now, session_id, expected),
        )
    if cursor.rowcount == 1:
        return
    row = conn.execute("SELECT version FROM swarm_sessions WHERE id = ?", (session_id,)).fetchone()
    raise SessionConflictError(session_id, expected, int(row[0]) if row else 0)


def _delete(conn: sqlite3.Connection, session_id: str) -> None:
    conn.execute("DELETE FROM swarm_sessions WHERE id = ?", (session_id,))
