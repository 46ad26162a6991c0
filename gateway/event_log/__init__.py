"""The event log: every step of every run, append-only, readable from a seq and followed live.

Memory, SQLite, and Redis (``redis.py``, imported when first opened: shared by gateway replicas)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Literal

from agent_server.stores import parse_store_spec
from gateway.event_log.base import EventLog
from gateway.event_log.memory import MemoryEventLog
from gateway.event_log.retention import Retention
from gateway.event_log.sqlite import SQLiteEventLog

if TYPE_CHECKING:
    from agent_server.stores.redis_settings import RedisSettings


def open_event_log(
    spec: str,
    *,
    redis: RedisSettings | None = None,
    synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
    retention: Retention | None = None,
) -> EventLog:
    """``"memory"``, ``"sqlite:PATH"`` or ``"redis://..."`` (see ``agent_server.stores.parse_store_spec``).

    Every way a spec can fail, including a file that cannot be opened, is a ValueError that says why.
    A Redis log connects at its first call; ``redis`` are its settings. ``synchronous``: an
    SQLite log's durability (``SQLiteEventLog``). ``retention``: what it keeps of closed runs
    (retention.py; by default everything).
    """
    kind, path = parse_store_spec(spec, what="event log")
    if kind == "memory":
        return MemoryEventLog(retention=retention)
    if kind == "redis":
        from gateway.event_log.redis import RedisEventLog

        return RedisEventLog(spec, settings=redis, retention=retention)
    assert path is not None
    try:
        return SQLiteEventLog(path, synchronous=synchronous, retention=retention)
    except (OSError, sqlite3.Error) as exc:
        raise ValueError(f"cannot open the event log {path!r}: {exc}") from None


__all__ = ["EventLog", "MemoryEventLog", "Retention", "SQLiteEventLog", "open_event_log"]
