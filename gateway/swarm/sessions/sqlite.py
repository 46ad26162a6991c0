"""SQLite sessions: the embedded default that survives a restart.

One row per session (JSON state plus version). Compare-and-set is a single UPDATE ...
WHERE version = ?, so two processes sharing the file cannot overwrite each other.
Calls run in a worker thread; one connection, guarded by a lock.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import anyio.to_thread
import orjson

from ..errors import SessionConflictError
from .base import Session, SessionStore

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
        self._db = sqlite3.connect(self.path, timeout=busy_timeout_s, check_same_thread=False, isolation_level=None)
        self._mutex = threading.Lock()
        with self._mutex:
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)

    async def load(self, session_id: str) -> Session:
        row = await anyio.to_thread.run_sync(self._select, session_id)
        if row is None:
            return Session(id=session_id)
        version, state = row
        return Session.from_state(session_id, version, orjson.loads(state))

    async def save(self, session: Session) -> Session:
        state = _encode(session)
        await anyio.to_thread.run_sync(self._compare_and_set, session.id, session.version, state)
        session.version += 1
        return session

    async def delete(self, session_id: str) -> None:
        await anyio.to_thread.run_sync(self._execute, "DELETE FROM swarm_sessions WHERE id = ?", (session_id,))

    async def close(self) -> None:
        """In a worker thread: the lock may be held by a call waiting up to busy_timeout on the file."""
        await anyio.to_thread.run_sync(self._close)

    def _close(self) -> None:
        with self._mutex:
            self._db.close()

    def _select(self, session_id: str) -> tuple[int, bytes] | None:
        with self._mutex:
            row = self._db.execute("SELECT version, state FROM swarm_sessions WHERE id = ?", (session_id,)).fetchone()
        return (int(row[0]), bytes(row[1])) if row else None

    def _compare_and_set(self, session_id: str, expected: int, state: bytes) -> None:
        now = time.time_ns() // 1_000_000
        with self._mutex:
            if expected == 0:
                cursor = self._db.execute(
                    "INSERT INTO swarm_sessions (id, version, state, updated_ms) VALUES (?, 1, ?, ?) "
                    "ON CONFLICT(id) DO NOTHING",
                    (session_id, state, now),
                )
            else:
                cursor = self._db.execute(
                    "UPDATE swarm_sessions SET version = version + 1, state = ?, updated_ms = ? "
                    "WHERE id = ? AND version = ?",
                    (state, now, session_id, expected),
                )
            if cursor.rowcount == 1:
                return
            row = self._db.execute("SELECT version FROM swarm_sessions WHERE id = ?", (session_id,)).fetchone()
        raise SessionConflictError(session_id, expected, int(row[0]) if row else 0)

    def _execute(self, sql: str, params: tuple[Any, ...]) -> None:
        with self._mutex:
            self._db.execute(sql, params)


def _encode(session: Session) -> bytes:
    """JSON state; a context variable that JSON cannot hold fails here, before anything is written."""
    try:
        return orjson.dumps(session.to_state(), option=orjson.OPT_NON_STR_KEYS)
    except TypeError as exc:
        raise TypeError(f"session {session.id!r} holds a value SQLite sessions cannot store as JSON: {exc}") from exc
