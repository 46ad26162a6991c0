"""The SQLite event log against raw sqlite3 committing one event at a time, in one process.

    python -m bench.event_log [--quick]

Measured, rounds interleaved, medians printed with the ratio event log / raw sqlite3:

- ``SQLiteEventLog.append`` events per second at 1 and ``WRITERS`` concurrent writers (each
  writer appends its own run's events one after another; an append returns once committed);
- the reference: raw ``sqlite3`` on the same schema, WAL and ``synchronous``, one
  ``BEGIN IMMEDIATE`` ... ``COMMIT`` per event of an already serialised body, one writer.

Each rate runs on a fresh file in a temporary directory, at ``synchronous=NORMAL`` (the
default) and at ``FULL``. This process runs on the client's core.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

import anyio

from bench._support import client_core, median, pinning, ratio
from gateway.event_log.sqlite import _SCHEMA, SQLiteEventLog
from gateway.recording.events import Event, EventType

WRITERS = 50


def _event(run_id: str, n: int) -> Event:
    return Event.create(EventType.AGENT_TOOL_PROGRESS, run_id, chunk_index=n, kind="artifact", text=f"chunk {n}")


async def log_rate(path: Path, synchronous: str, *, writers: int, seconds: float) -> float:
    """Events per second appended (each committed before its append returned) by ``writers`` tasks."""
    log = SQLiteEventLog(path, synchronous=synchronous)  # type: ignore[arg-type]
    appended = 0
    started = time.perf_counter()
    deadline = started + seconds

    async def writer(run_id: str) -> None:
        nonlocal appended
        n = 0
        while time.perf_counter() < deadline:
            await log.append(_event(run_id, n))
            n += 1
            appended += 1

    try:
        async with anyio.create_task_group() as task_group:
            for number in range(writers):
                task_group.start_soon(writer, f"run-{number}")
        return appended / (time.perf_counter() - started)
    finally:
        await log.aclose()


def raw_rate(path: Path, synchronous: str, *, seconds: float) -> float:
    """Events per second of plain sqlite3: one transaction per event, the body serialised once up front."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.executescript(_SCHEMA)
    body = _event("raw", 0).to_json()
    count = 0
    started = time.perf_counter()
    deadline = started + seconds
    try:
        while time.perf_counter() < deadline:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO events (run_id, seq, type, timestamp_ms, body) VALUES (?, ?, ?, ?, ?)",
                ("raw", count, "agent_tool_progress", 0, body),
            )
            conn.execute("COMMIT")
            count += 1
        return count / (time.perf_counter() - started)
    finally:
        conn.close()


def measure(*, quick: bool, tmp: Path) -> dict[tuple[str, str], float]:
    rounds = 1 if quick else 3
    seconds = 0.3 if quick else 1.5
    seen: dict[tuple[str, str], list[float]] = {}
    files = iter(range(10**6))
    for synchronous in ("NORMAL", "FULL"):
        figures = {
            "raw sqlite3, 1 writer": lambda s=synchronous: raw_rate(tmp / f"{next(files)}.db", s, seconds=seconds),
            "append, 1 writer": lambda s=synchronous: anyio.run(
                lambda: log_rate(tmp / f"{next(files)}.db", s, writers=1, seconds=seconds)
            ),
            f"append, {WRITERS} writers": lambda s=synchronous: anyio.run(
                lambda: log_rate(tmp / f"{next(files)}.db", s, writers=WRITERS, seconds=seconds)
            ),
        }
        for number in range(rounds):
            order = list(figures.items())
            for what, run in order if number % 2 == 0 else reversed(order):
                seen.setdefault((synchronous, what), []).append(run())
    return {key: median(values) for key, values in seen.items()}


def report(figures: dict[tuple[str, str], float]) -> str:
    lines = [f"  {'synchronous':<13}{'measure':<24}{'events/s':>10}{'ratio to raw':>14}"]
    for (synchronous, what), value in figures.items():
        raw = figures[(synchronous, "raw sqlite3, 1 writer")]
        lines.append(f"  {synchronous:<13}{what:<24}{value:>10.0f}{ratio(value, raw):>14}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short round")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, client_core():
        print(f"SQLiteEventLog.append against raw sqlite3 (one commit per event); {pinning()}; medians of rounds")
        print(report(measure(quick=args.quick, tmp=Path(tmp))), flush=True)


if __name__ == "__main__":
    main()
