"""The event log: every step of every run, append-only, readable from a seq and followed live."""

from __future__ import annotations

from .base import EventLog
from .memory import MemoryEventLog
from .sqlite import SQLiteEventLog


def open_event_log(spec: str) -> EventLog:
    """``"memory"`` or ``"sqlite:PATH"``."""
    if spec == "memory":
        return MemoryEventLog()
    if spec.startswith("sqlite:") and len(spec) > len("sqlite:"):
        return SQLiteEventLog(spec.removeprefix("sqlite:"))
    raise ValueError(f"unknown event log {spec!r}; expected 'memory' or 'sqlite:PATH'")


__all__ = ["EventLog", "MemoryEventLog", "SQLiteEventLog", "open_event_log"]
