"""An event log of each kind for the tests that run on every backend: memory, SQLite (a file in a directory of the
test's), Redis (on the test's own key prefix)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from agent_server.stores.redis_settings import RedisSettings
from gateway.event_log import EventLog, MemoryEventLog, Retention, SQLiteEventLog
from gateway.event_log.redis import RedisEventLog

KINDS = ("memory", "sqlite", "redis")


def event_log_of(
    kind: str, directory: Path, redis_url: Callable[[], str], retention: Retention | None = None
) -> EventLog:
    """A new log of ``kind``; ``redis_url`` is asked only for a Redis one (the fixture starts a server)."""
    if kind == "memory":
        return MemoryEventLog(retention=retention)
    if kind == "sqlite":
        return SQLiteEventLog(directory / "events.db", retention=retention)
    return RedisEventLog(redis_url(), retention=retention)


@asynccontextmanager
async def replica_logs(redis_url: str, settings: RedisSettings, count: int) -> AsyncIterator[list[RedisEventLog]]:
    """``count`` Redis logs on one prefix, each standing for a replica; all closed when the block ends."""
    logs = [RedisEventLog(redis_url, settings=settings) for _ in range(count)]
    try:
        yield logs
    finally:
        for log in logs:
            await log.aclose()
