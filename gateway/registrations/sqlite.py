"""Registrations in a SQLite file (by default the sessions' file): they survive a restart of the gateway.

One row per kind and name, and one row holding the version, changed in the same write
transaction, so processes sharing the file never both register one name.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

from agent_server.stores.sqlite_db import SQLiteDatabase, write_transaction
from gateway.registrations.base import Kind, Registration, RegistryStore

_SCHEMA = """
CREATE TABLE IF NOT EXISTS registrations (
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    data BLOB,
    PRIMARY KEY (kind, name)
);
CREATE TABLE IF NOT EXISTS registrations_version (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT OR IGNORE INTO registrations_version VALUES (1, 0);
"""


class SQLiteRegistryStore(RegistryStore):
    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._db = SQLiteDatabase(path, schema=_SCHEMA, what="registry")

    async def register(self, kind: Kind, name: str, data: dict[str, Any]) -> bool:
        return await self._db.run(_register, kind, name, orjson.dumps(data))

    async def unregister(self, kind: Kind, name: str) -> None:
        await self._db.run(_unregister, kind, name)

    async def entries(self) -> list[Registration]:
        rows = await self._db.run(_entries)
        return [Registration(kind, name, orjson.loads(data) if data is not None else None) for kind, name, data in rows]

    async def version(self) -> int:
        return await self._db.run(_version)

    async def close(self) -> None:
        await self._db.aclose()


def _register(conn: sqlite3.Connection, kind: str, name: str, data: bytes) -> bool:
    with write_transaction(conn):
        row = conn.execute("SELECT data FROM registrations WHERE kind = ? AND name = ?", (kind, name)).fetchone()
        if row is not None and row[0] is not None:
            return False
        conn.execute(
            "INSERT INTO registrations (kind, name, data) VALUES (?, ?, ?) "
            "ON CONFLICT (kind, name) DO UPDATE SET data = excluded.data",
            (kind, name, data),
        )
        conn.execute("UPDATE registrations_version SET version = version + 1")
    return True


def _unregister(conn: sqlite3.Connection, kind: str, name: str) -> None:
    with write_transaction(conn):
        conn.execute(
            "INSERT INTO registrations (kind, name, data) VALUES (?, ?, NULL) "
            "ON CONFLICT (kind, name) DO UPDATE SET data = NULL",
            (kind, name),
        )
        conn.execute("UPDATE registrations_version SET version = version + 1")


def _entries(conn: sqlite3.Connection) -> list[tuple[Kind, str, bytes | None]]:
    return conn.execute("SELECT kind, name, data FROM registrations ORDER BY rowid").fetchall()


def _version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT version FROM registrations_version").fetchone()[0])
