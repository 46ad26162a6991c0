"""Task stores: the interface, an in-memory store, a SQLite store and a Redis store (``redis.py``, imported
when first opened), ``open_store``, and the pieces other stores share: ``parse_store_spec``, ``SQLiteDatabase``."""

from __future__ import annotations

import sqlite3

from agent_server.stores.base import StoreFull, StoreUnavailable, TaskFilter, TaskPage, TaskStore
from agent_server.stores.memory import MemoryTaskStore
from agent_server.stores.spec import StoreKind, StoreSpec, parse_store_spec
from agent_server.stores.sqlite import SQLiteTaskStore
from agent_server.stores.sqlite_db import SQLiteDatabase, write_transaction


def open_store(spec: str) -> TaskStore:
    """``"memory"``, ``"sqlite:PATH"`` (PATH relative to the working directory or absolute) or ``"redis://..."``.

    Every way a spec can fail, including a file that cannot be opened, is a ValueError that says why.
    A Redis store connects at its first call.
    """
    kind, path = parse_store_spec(spec, what="task store")
    if kind == "memory":
        return MemoryTaskStore()
    if kind == "redis":
        from agent_server.stores.redis import RedisTaskStore

        return RedisTaskStore(spec)
    assert path is not None
    try:
        return SQLiteTaskStore(path)
    except (OSError, sqlite3.Error) as exc:
        raise ValueError(f"cannot open the task store {path!r}: {exc}") from None


__all__ = [
    "MemoryTaskStore",
    "SQLiteDatabase",
    "SQLiteTaskStore",
    "StoreFull",
    "StoreKind",
    "StoreSpec",
    "StoreUnavailable",
    "TaskFilter",
    "TaskPage",
    "TaskStore",
    "open_store",
    "parse_store_spec",
    "write_transaction",
]
