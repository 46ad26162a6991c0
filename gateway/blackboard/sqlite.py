"""Boards in SQLite: one row per board (JSON entries, owner, version), shared by every process using the file.

The compare-and-set is one ``UPDATE ... WHERE version = ?`` (an ``INSERT ... ON CONFLICT DO
NOTHING`` for a new board), so two processes writing the same board cannot both win.
Calls go through agent_server's SQLiteDatabase: one connection, one call at a time, in the
database's own thread.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import orjson

from agent_server.stores import SQLiteDatabase
from gateway.blackboard.base import Board, BoardStore
from gateway.errors import BoardConflict

_SCHEMA = """
CREATE TABLE IF NOT EXISTS boards (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    owner TEXT,
    entries BLOB NOT NULL,
    updated_ms INTEGER NOT NULL
)
"""


class SQLiteBoardStore(BoardStore):
    def __init__(self, path: str | Path, *, busy_timeout_s: float = 5.0) -> None:
        self.path = str(path)
        self._db = SQLiteDatabase(path, schema=_SCHEMA, what="blackboard store", busy_timeout_s=busy_timeout_s)

    async def get(self, name: str) -> Board | None:
        row: Board | None = await self._db.run(_select, name)
        return row

    async def compare_and_set(self, board: Board, expected_version: int) -> Board:
        written: Board = await self._db.run(_compare_and_set, board, expected_version, orjson.dumps(board.entries))
        return written

    async def delete(self, name: str) -> None:
        await self._db.run(_delete, name)

    async def close(self) -> None:
        await self._db.aclose()


def _select(conn: sqlite3.Connection, name: str) -> Board | None:
    row = conn.execute("SELECT version, owner, entries FROM boards WHERE name = ?", (name,)).fetchone()
    return _board(name, row) if row else None


def _board(name: str, row: Any) -> Board:
    return Board(name, int(row[0]), orjson.loads(bytes(row[2])), row[1])


def _compare_and_set(conn: sqlite3.Connection, board: Board, expected: int, entries: bytes) -> Board:
    now = time.time_ns() // 1_000_000
    if expected == 0:
        cursor = conn.execute(
            "INSERT INTO boards (name, version, owner, entries, updated_ms) VALUES (?, 1, ?, ?, ?) "
            "ON CONFLICT(name) DO NOTHING",
            (board.name, board.owner, entries, now),
        )
    else:
        cursor = conn.execute(
            "UPDATE boards SET version = version + 1, owner = ?, entries = ?, updated_ms = ? "
            "WHERE name = ? AND version = ?",
            (board.owner, entries, now, board.name, expected),
        )
    if cursor.rowcount == 1:
        return Board(board.name, expected + 1, orjson.loads(entries), board.owner)
    current = _select(conn, board.name) or Board(board.name)
    raise BoardConflict(board.name, expected, current)


def _delete(conn: sqlite3.Connection, name: str) -> None:
    conn.execute("DELETE FROM boards WHERE name = ?", (name,))
