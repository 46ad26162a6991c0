"""A task store in one SQLite file: tasks, their events and their push configs survive a restart.

Calls go through ``SQLiteDatabase`` (``sqlite_db.py``): the database's own thread, one call at a
time on one connection, WAL mode with ``synchronous=NORMAL``: a crash of the machine may lose
the last moments, a crash of the process loses nothing committed.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from agent_server.stores.base import RUNNING_STATES, TaskFilter, TaskPage, TaskStore
from agent_server.stores.cursors import before, decode_cursor, encode_cursor
from agent_server.stores.sqlite_db import SQLiteDatabase, write_transaction
from protocol import StreamEvent, Task, parse_stream_event

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    updated_at REAL NOT NULL,
    body BLOB NOT NULL,
    owner TEXT
);
CREATE INDEX IF NOT EXISTS tasks_by_age ON tasks (updated_at);
CREATE TABLE IF NOT EXISTS events (
    task_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS push_configs (
    task_id TEXT NOT NULL,
    id TEXT NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (task_id, id)
) WITHOUT ROWID;
"""

_EXPIRE_EVERY_S = 60.0


DEFAULT_TTL_S = 3600.0
"""How long a task that is not running is kept after its last update, as in the memory store."""


class SQLiteTaskStore(TaskStore):
    """Tasks not running and not updated for ``ttl_s`` seconds are deleted (never, when None).

    Running tasks never expire. Expiry runs at most once a minute, piggybacked on
    ``save_task``, or on ``expire()``.
    """

    def __init__(
        self, path: str | Path, *, ttl_s: float | None = DEFAULT_TTL_S, clock: Callable[[], float] = time.time
    ) -> None:
        self.path = Path(path)
        self.ttl_s = ttl_s
        self._clock = clock
        self._last_expiry = clock()
        self._db = SQLiteDatabase(self.path, schema=_SCHEMA, what="task store", columns={"tasks": {"owner": "TEXT"}})

    async def save_task(self, task: Task, owner: str | None = None) -> None:
        body = task.to_json()
        now = self._clock()
        await self._db.run(_save, task.id, task.status.state.value, now, body, owner)
        if self.ttl_s is not None and now - self._last_expiry >= _EXPIRE_EVERY_S:
            await self.expire()

    async def load_task(self, task_id: str) -> Task | None:
        row = await self._db.run(_fetch_one, "SELECT body FROM tasks WHERE id = ?", (task_id,))
        return Task.model_validate_json(row[0]) if row else None

    async def owner_of(self, task_id: str) -> str | None:
        row = await self._db.run(_fetch_one, "SELECT owner FROM tasks WHERE id = ?", (task_id,))
        return row[0] if row else None

    async def append_event(self, task_id: str, event: StreamEvent) -> None:
        await self._db.run(_execute, "INSERT INTO events VALUES (?, ?, ?)", (task_id, event.seq, event.encoded))

    async def read_events(self, task_id: str, after_seq: int = -1) -> list[StreamEvent]:
        rows = await self._db.run(
            _fetch_all, "SELECT body FROM events WHERE task_id = ? AND seq > ? ORDER BY seq", (task_id, after_seq)
        )
        return [parse_stream_event(orjson.loads(body)) for (body,) in rows]

    async def last_seq(self, task_id: str) -> int:
        row = await self._db.run(_fetch_one, "SELECT MAX(seq) FROM events WHERE task_id = ?", (task_id,))
        return -1 if row is None or row[0] is None else int(row[0])

    async def list_tasks(self, where: TaskFilter, *, limit: int, cursor: str = "") -> TaskPage:
        """The owner and state are chosen in SQL; the session and the status time from each row's task."""
        after = decode_cursor(cursor) if cursor else None
        rows = await self._db.run(_select, where)
        places: list[tuple[float, str, bytes]] = []
        for task_id, updated_at, body in rows:
            task = orjson.loads(body)
            status = task.get("status") or {}
            if where.session_id is not None and task.get("sessionId") != where.session_id:
                continue
            if where.status_after is not None and str(status.get("timestamp", "")) < where.status_after:
                continue
            places.append((updated_at, task_id, body))
        rest = [place for place in places if before(place[:2], after)]
        page = rest[:limit]
        tasks = [Task.model_validate_json(body) for _, _, body in page]
        next_cursor = encode_cursor(page[-1][0], page[-1][1]) if len(rest) > limit else ""
        return TaskPage(tasks=tasks, next_cursor=next_cursor, total=len(places))

    async def save_push_config(self, task_id: str, config_id: str, body: bytes) -> None:
        await self._db.run(
            _execute,
            "INSERT INTO push_configs VALUES (?, ?, ?) ON CONFLICT (task_id, id) DO UPDATE SET body = excluded.body",
            (task_id, config_id, body),
        )

    async def push_configs(self, task_id: str) -> dict[str, bytes]:
        rows = await self._db.run(_fetch_all, "SELECT id, body FROM push_configs WHERE task_id = ?", (task_id,))
        return dict(rows)

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        await self._db.run(_execute, "DELETE FROM push_configs WHERE task_id = ? AND id = ?", (task_id, config_id))

    async def delete_task(self, task_id: str) -> None:
        await self._db.run(_delete, task_id)

    async def expire(self) -> int:
        if self.ttl_s is None:
            return 0
        self._last_expiry = self._clock()
        return await self._db.run(_expire, self._last_expiry - self.ttl_s)

    async def aclose(self) -> None:
        await self._db.aclose()


def _execute(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> None:
    conn.execute(sql, args)


def _fetch_one(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    row: tuple[Any, ...] | None = conn.execute(sql, args).fetchone()
    return row


def _fetch_all(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    return conn.execute(sql, args).fetchall()


def _save(conn: sqlite3.Connection, task_id: str, state: str, now: float, body: bytes, owner: str | None) -> None:
    conn.execute(
        "INSERT INTO tasks (id, state, updated_at, body, owner) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at, "
        "body = excluded.body",
        (task_id, state, now, body, owner),
    )


def _select(conn: sqlite3.Connection, where: TaskFilter) -> list[tuple[str, float, bytes]]:
    clauses, args = [], []
    if where.owned_by is not None:
        clauses.append("owner = ?")
        args.append(where.owned_by)
    if where.state is not None:
        clauses.append("state = ?")
        args.append(where.state.value)
    condition = f"WHERE {' AND '.join(clauses)} " if clauses else ""
    sql = f"SELECT id, updated_at, body FROM tasks {condition}ORDER BY updated_at DESC, id DESC"
    return conn.execute(sql, args).fetchall()


def _delete(conn: sqlite3.Connection, task_id: str) -> None:
    with write_transaction(conn):
        conn.execute("DELETE FROM events WHERE task_id = ?", (task_id,))
        conn.execute("DELETE FROM push_configs WHERE task_id = ?", (task_id,))
        conn.execute("DELETE FROM tasks WHERE id = ?", (task_id,))


def _expire(conn: sqlite3.Connection, cutoff: float) -> int:
    running = tuple(state.value for state in RUNNING_STATES)
    marks = ", ".join("?" * len(running))
    with write_transaction(conn):
        doomed = [
            row[0]
            for row in conn.execute(
                f"SELECT id FROM tasks WHERE updated_at < ? AND state NOT IN ({marks})", (cutoff, *running)
            )
        ]
        conn.executemany("DELETE FROM events WHERE task_id = ?", [(i,) for i in doomed])
        conn.executemany("DELETE FROM push_configs WHERE task_id = ?", [(i,) for i in doomed])
        conn.executemany("DELETE FROM tasks WHERE id = ?", [(i,) for i in doomed])
    return len(doomed)
