"""The SQLite event log: one row per event in a WAL-mode file, committed on every append.

Each ``append`` is its own transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``), so an event
is in the file once ``append`` returns and a process killed with SIGKILL loses nothing
already appended. ``synchronous=NORMAL`` (the default) survives process death; pass
``synchronous="FULL"`` to survive power loss too, at the price of an fsync per event.

The ``seq`` is taken inside the write transaction from the primary-key index, so several
writers, even in several processes, never hand out the same one. Followers in this
process are woken by appends like the memory log's; to see appends made by another
process they also re-read every ``cross_process_poll_s`` seconds.

Calls go through ``agent_server.stores.SQLiteDatabase``, like the task store's: worker
threads, one call at a time on one connection (queued in the event loop, not on a lock).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Literal

import anyio
import orjson

from agent_server.stores.sqlite_db import SQLiteDatabase, write_transaction
from gateway.events import Event, EventType, now_ms

from .base import INTERRUPTED, EventLog

_MAX_INTEGER = 2**63 - 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    timestamp_ms INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created_ms INTEGER NOT NULL,
    closed INTEGER NOT NULL DEFAULT 0,
    owner TEXT
);
"""


class SQLiteEventLog(EventLog):
    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        cross_process_poll_s: float = 0.5,
    ) -> None:
        super().__init__()
        self.path = str(path)
        self.cross_process_poll_s = cross_process_poll_s
        self._db = SQLiteDatabase(
            self.path,
            schema=_SCHEMA,
            what="event log",
            synchronous=synchronous,
            busy_timeout_s=10.0,
            columns={"runs": {"owner": "TEXT"}},
        )

    async def append(self, event: Event) -> Event:
        stored = await self._db.run(_append, event)
        self._notify(event.run_id)
        return stored

    async def read(self, run_id: str, after_seq: int = -1, limit: int | None = None) -> list[Event]:
        # an SQLite integer has 64 bits; a seq past them is past every event, as in the memory log
        rows = await self._db.run(_read, run_id, min(after_seq, _MAX_INTEGER), -1 if limit is None else limit)
        return [Event.from_dict(orjson.loads(body)) for (body,) in rows]

    async def close_run(self, run_id: str) -> None:
        await self._db.run(_close_run, run_id)
        self._notify(run_id)

    async def is_closed(self, run_id: str) -> bool:
        return await self._db.run(_is_closed, run_id)

    async def close_abandoned_runs(self) -> list[str]:
        run_ids = await self._db.run(_close_abandoned_runs, INTERRUPTED)
        for run_id in run_ids:
            self._notify(run_id)
        return run_ids

    async def open_run(self, run_id: str, *, owner: str | None = None) -> None:
        await self._db.run(_open_run, run_id, owner)

    async def run_owner(self, run_id: str) -> str | None:
        return await self._db.run(_run_owner, run_id)

    async def list_runs(self, limit: int = 100, *, owner: str | None = None) -> list[str]:
        return await self._db.run(_list_runs, limit, owner)

    async def aclose(self) -> None:
        await super().aclose()
        await self._db.aclose()

    async def _wait(self, wakeup: anyio.Event) -> None:
        with anyio.move_on_after(self.cross_process_poll_s):
            await wakeup.wait()


def _append(conn: sqlite3.Connection, event: Event) -> Event:
    with write_transaction(conn):
        return _insert(conn, event)


def _close_abandoned_runs(conn: sqlite3.Connection, reason: str) -> list[str]:
    with write_transaction(conn):
        rows = conn.execute(
            "SELECT run_id FROM runs WHERE closed = 0"
            " AND EXISTS (SELECT 1 FROM events WHERE events.run_id = runs.run_id)"
        ).fetchall()
        for (run_id,) in rows:
            _insert(conn, Event.create(EventType.RUN_FAILED, run_id, error=reason, error_type="Interrupted"))
            conn.execute("UPDATE runs SET closed = 1 WHERE run_id = ?", (run_id,))
    return [run_id for (run_id,) in rows]


def _read(conn: sqlite3.Connection, run_id: str, after_seq: int, limit: int) -> list[tuple[bytes]]:
    return conn.execute(
        "SELECT body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?", (run_id, after_seq, limit)
    ).fetchall()


def _close_run(conn: sqlite3.Connection, run_id: str) -> None:
    conn.execute(
        "INSERT INTO runs (run_id, created_ms, closed) VALUES (?, ?, 1) ON CONFLICT (run_id) DO UPDATE SET closed = 1",
        (run_id, now_ms()),
    )


def _is_closed(conn: sqlite3.Connection, run_id: str) -> bool:
    row = conn.execute("SELECT closed FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return bool(row and row[0])


def _open_run(conn: sqlite3.Connection, run_id: str, owner: str | None) -> None:
    conn.execute("INSERT OR IGNORE INTO runs (run_id, created_ms, owner) VALUES (?, ?, ?)", (run_id, now_ms(), owner))


def _run_owner(conn: sqlite3.Connection, run_id: str) -> str | None:
    row = conn.execute("SELECT owner FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return row[0] if row else None


def _list_runs(conn: sqlite3.Connection, limit: int, owner: str | None) -> list[str]:
    if owner is None:
        rows = conn.execute("SELECT run_id FROM runs ORDER BY rowid DESC LIMIT ?", (limit,)).fetchall()
    else:
        rows = conn.execute(
            "SELECT run_id FROM runs WHERE owner = ? ORDER BY rowid DESC LIMIT ?", (owner, limit)
        ).fetchall()
    return [run_id for (run_id,) in rows]


def _insert(conn: sqlite3.Connection, event: Event) -> Event:
    """Append ``event`` as its run's next seq, inside the caller's write transaction."""
    (seq,) = conn.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM events WHERE run_id = ?", (event.run_id,)).fetchone()
    stored = event.with_seq(seq)
    conn.execute(
        "INSERT INTO events (run_id, seq, type, timestamp_ms, body) VALUES (?, ?, ?, ?, ?)",
        (stored.run_id, seq, stored.type, stored.timestamp_ms, stored.to_json()),
    )
    if seq == 0:
        conn.execute("INSERT OR IGNORE INTO runs (run_id, created_ms) VALUES (?, ?)", (stored.run_id, now_ms()))
    return stored
