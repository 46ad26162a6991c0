"""The event log: every step of every run, append-only, readable from a seq and followed live."""

from __future__ import annotations

import sqlite3

from agent_server.stores import parse_store_spec

from .base import EventLog
from .memory import MemoryEventLog
from .sqlite import SQLiteEventLog


def open_event_log(spec: str) -> EventLog:
    """``"memory"`` or ``"sqlite:PATH"`` (see ``agent_server.stores.parse_store_spec``).

    Every way a spec can fail, including a file that cannot be opened, is a ValueError that says why.
    """
    kind, path = parse_store_spec(spec, what="event log")
    if kind == "memory":
        return MemoryEventLog()
    assert path is not None
    try:
        return SQLiteEventLog(path)
    except (OSError, sqlite3.Error) as exc:
        raise ValueError(f"cannot open the event log {path!r}: {exc}") from None


__all__ = ["EventLog", "MemoryEventLog", "SQLiteEventLog", "open_event_log"]
