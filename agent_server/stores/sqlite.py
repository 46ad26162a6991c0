"""A task store in one SQLite file: tasks and their events survive a restart.

Blocking sqlite3 calls run in worker threads (``anyio.to_thread``) so the event loop never
waits on the disk; one connection, guarded by a lock, serves them one at a time. The
database runs in WAL mode with ``synchronous=NORMAL``: a crash of the machine may lose
the last moments, a crash of the process loses nothing committed.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import orjson

from protocol import StreamEvent, Task, parse_stream_event

from .base import RUNNING_STATES, TaskStore

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    updated_at REAL NOT NULL,
    body BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_age ON tasks (updated_at);
CREATE TABLE IF NOT EXISTS events (
    task_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;
"""

_EXPIRE_EVERY_S = 60.0


class SQLiteTaskStore(TaskStore):
    """Tasks not running and not updated for ``ttl_s`` seconds are deleted (never, when None).

    Expiry runs at most once a minute, piggybacked on ``save_task``, or on ``expire()``.
    """

    def __init__(
        self, path: str | Path, *, ttl_s: float | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.path = Path(path)
        self.ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last_expiry = clock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=5.0)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
        except BaseException:
            conn.close()
            raise
        self._conn: sqlite3.Connection | None = conn

    async def save_task(self, task: Task) -> None:
        body = task.to_json()
        now = self._clock()
        await self._run(self._save, task.id, task.status.state.value, now, body)
        if self.ttl_s is not None and now - self._last_expiry >= _EXPIRE_EVERY_S:
            await self.expire()

    async def load_task(self, task_id: str) -> Task | None:
        row = await self._run(self._fetch_one, "SELECT body FROM tasks WHERE id = ?", (task_id,))
        return Task.model_validate_json(row[0]) if row else None

    async def append_event(self, task_id: str, event: StreamEvent) -> None:
        await self._run(self._execute, "INSERT INTO events VALUES (?, ?, ?)", (task_id, event.seq, event.to_json()))

    async def read_events(self, task_id: str, after_seq: int = -1) -> list[StreamEvent]:
        rows = await self._run(
            self._fetch_all, "SELECT body FROM events WHERE task_id = ? AND seq > ? ORDER BY seq", (task_id, after_seq)
        )
        return [parse_stream_event(orjson.loads(body)) for (body,) in rows]

    async def last_seq(self, task_id: str) -> int:
        row = await self._run(self._fetch_one, "SELECT MAX(seq) FROM events WHERE task_id = ?", (task_id,))
        return -1 if row is None or row[0] is None else int(row[0])

    async def delete_task(self, task_id: str) -> None:
        await self._run(self._delete, task_id)

    async def expire(self) -> int:
        if self.ttl_s is None:
            return 0
        self._last_expiry = self._clock()
        return await self._run(self._expire, self._last_expiry - self.ttl_s)

    async def aclose(self) -> None:
        await self._run(self._close)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(self._locked, fn, *args)

    def _locked(self, fn: Callable[..., T], *args: Any) -> T:
        with self._lock:
            return fn(*args)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"the task store {self.path} is closed")
        return self._conn

    def _execute(self, sql: str, args: tuple[Any, ...]) -> None:
        self._connection().execute(sql, args)

    def _fetch_one(self, sql: str, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        return self._connection().execute(sql, args).fetchone()

    def _fetch_all(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return self._connection().execute(sql, args).fetchall()

    def _save(self, task_id: str, state: str, now: float, body: bytes) -> None:
        self._connection().execute(
            "INSERT INTO tasks VALUES (?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at, "
            "body = excluded.body",
            (task_id, state, now, body),
        )

    def _delete(self, task_id: str) -> None:
        conn = self._connection()
        with conn:
            conn.execute("BEGIN")
            conn.execute("DELETE FROM events WHERE task_id = ?", (task_id,))
            conn.execute("DELETE FROM tasks WHERE id = ?", (task_id,))

    def _expire(self, cutoff: float) -> int:
        running = tuple(state.value for state in RUNNING_STATES)
        marks = ", ".join("?" * len(running))
        conn = self._connection()
        with conn:
            conn.execute("BEGIN")
            doomed = [
                row[0]
                for row in conn.execute(
                    f"SELECT id FROM tasks WHERE updated_at < ? AND state NOT IN ({marks})", (cutoff, *running)
                )
            ]
            conn.executemany("DELETE FROM events WHERE task_id = ?", [(i,) for i in doomed])
            conn.executemany("DELETE FROM tasks WHERE id = ?", [(i,) for i in doomed])
        return len(doomed)

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
