"""The event log, memory, SQLite and Redis behind one interface: per-run seq, reads from a seq, live follow."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import orjson
import pytest

from gateway.event_log import EventLog, MemoryEventLog, SQLiteEventLog, open_event_log, sqlite as sqlite_module
from gateway.event_log.redis import RedisEventLog
from gateway.event_log.sqlite import _append_all
from gateway.recording.events import Event, EventType
from tests.support.waiting import until

pytestmark = pytest.mark.anyio


NO_POLL_S = 3600.0
"""SQLite's re-read for other processes, made longer than any test: a live event then comes only by a wake-up."""


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventLog]:
    store: EventLog
    if request.param == "memory":
        store = MemoryEventLog()
    elif request.param == "sqlite":
        store = SQLiteEventLog(tmp_path / "events.db", cross_process_poll_s=NO_POLL_S)
    else:
        store = RedisEventLog(request.getfixturevalue("redis_url"))
    try:
        yield store
    finally:
        await store.aclose()


def _event(run_id: str, n: int) -> Event:
    return Event.create(EventType.AGENT_TOOL_PROGRESS, run_id, chunk_index=n, text=f"t{n}")


async def test_append_assigns_gapless_seq_per_run_and_read_returns_from_a_seq(log: EventLog) -> None:
    stored = [await log.append(_event("a", n)) for n in range(5)]
    other = await log.append(_event("b", 0))
    assert [e.seq for e in stored] == [0, 1, 2, 3, 4]
    assert other.seq == 0
    events = await log.read("a")
    assert [(e.seq, e.fields["text"]) for e in events] == [(n, f"t{n}") for n in range(5)]
    assert [e.seq for e in await log.read("a", after_seq=2)] == [3, 4]
    assert [e.seq for e in await log.read("a", after_seq=0, limit=2)] == [1, 2]
    assert await log.read("missing") == []


async def test_reading_after_a_seq_past_64_bits_finds_nothing(log: EventLog) -> None:
    """``GET /runs/{id}/events?after_seq=`` takes any integer; SQLite's are 64-bit, and the stream broke off."""
    await log.append(_event("a", 0))
    assert await log.read("a", after_seq=10**30) == []
    await log.close_run("a")
    assert [event async for event in log.follow("a", after_seq=2**64)] == []


async def test_concurrent_appends_to_one_run_never_share_a_seq(log: EventLog) -> None:
    async with anyio.create_task_group() as tg:
        for n in range(40):
            tg.start_soon(log.append, _event("r", n))
    assert [e.seq for e in await log.read("r")] == list(range(40))


async def test_follow_gives_stored_then_live_events_and_ends_when_the_run_closes(log: EventLog) -> None:
    """Neither log polls in the test (memory never does, SQLite's poll is an hour): the append wakes the follower."""
    await log.append(_event("r", 0))
    seen: list[int] = []
    got = [anyio.Event() for _ in range(3)]

    async def follower() -> None:
        async for event in log.follow("r"):
            seen.append(event.seq)
            got[event.seq].set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(follower)
            await got[0].wait()
            assert seen == [0]
            await log.append(_event("r", 1))
            await got[1].wait()
            assert seen == [0, 1]
            await log.append(_event("r", 2))
            await log.close_run("r")
    assert seen == [0, 1, 2]


async def test_follow_from_a_seq_of_a_closed_run_returns_the_rest_and_stops(log: EventLog) -> None:
    for n in range(4):
        await log.append(_event("r", n))
    await log.close_run("r")
    with anyio.fail_after(10):
        assert [e.seq async for e in log.follow("r", after_seq=1)] == [2, 3]
    assert await log.is_closed("r") and not await log.is_closed("other")


async def test_as_ndjson_writes_one_event_per_line_and_the_lines_ready_together_in_one_piece(log: EventLog) -> None:
    """The pieces are what the service writes to the socket: lines already stored go in one write, not one each."""
    for n in range(3):
        await log.append(_event("r", n))
    pieces = [piece async for piece in log.as_ndjson("r", after_seq=0)]
    assert len(pieces) == 1 and pieces[0].endswith(b"\n")
    decoded = [orjson.loads(line) for line in pieces[0].splitlines()]
    assert [(d["seq"], d["run_id"], d["type"], d["text"]) for d in decoded] == [
        (1, "r", "agent_tool_progress", "t1"),
        (2, "r", "agent_tool_progress", "t2"),
    ]
    await log.close_run("r")
    followed = [piece async for piece in log.as_ndjson("r", follow=True)]
    assert [len(piece.splitlines()) for piece in followed] == [3]


async def test_list_runs_is_newest_first(log: EventLog) -> None:
    for run_id in ("first", "second", "third"):
        await log.append(_event(run_id, 0))
    await log.append(_event("first", 1))
    assert await log.list_runs() == ["third", "second", "first"]
    assert await log.list_runs(limit=2) == ["third", "second"]


@pytest.mark.parametrize("log", ["memory", "sqlite"], indirect=True)  # Redis: tests/gateway/test_redis_stores.py
async def test_aclose_ends_waiting_followers(log: EventLog, monkeypatch: pytest.MonkeyPatch) -> None:
    done, waiting = anyio.Event(), anyio.Event()
    wait_for_append = log._wait

    async def observed_wait(wakeup: anyio.Event) -> None:
        waiting.set()
        await wait_for_append(wakeup)

    monkeypatch.setattr(log, "_wait", observed_wait)

    async def follower() -> None:
        async for _ in log.follow("open-run"):
            pass
        done.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(follower)
            await waiting.wait()
            await log.aclose()
            await done.wait()


async def test_sqlite_log_is_wal_durable_on_reopen_and_readable_by_another_connection(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    log = SQLiteEventLog(path)
    for n in range(3):
        await log.append(_event("r", n))
    with sqlite3.connect(path) as other:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert other.execute("SELECT COUNT(*) FROM events WHERE run_id = 'r'").fetchone()[0] == 3
    await log.close_run("r")
    await log.aclose()
    reopened = SQLiteEventLog(path)
    try:
        assert [e.seq for e in await reopened.read("r")] == [0, 1, 2]
        assert (await reopened.append(_event("r", 3))).seq == 3
        assert await reopened.is_closed("r")
    finally:
        await reopened.aclose()


async def test_sqlite_follower_sees_appends_made_through_another_log_instance(tmp_path: Path) -> None:
    """Another instance stands for another process: its appends are found by the follower's periodic re-read."""
    path = tmp_path / "events.db"
    reader = SQLiteEventLog(path, cross_process_poll_s=0.05)
    writer = SQLiteEventLog(path)
    try:
        seen: list[int] = []

        async def follower() -> None:
            async for event in reader.follow("r"):
                seen.append(event.seq)

        async with anyio.create_task_group() as tg:
            tg.start_soon(follower)
            for n in range(3):
                await writer.append(_event("r", n))
            await writer.close_run("r")
            await until(lambda: len(seen) == 3, "the follower to see the other instance's three appends")
        assert seen == [0, 1, 2]
    finally:
        await writer.aclose()
        await reader.aclose()


async def test_sqlite_follower_of_a_run_written_here_still_sees_another_instance_write_and_close_it(
    tmp_path: Path,
) -> None:
    """A run this instance opened and appends to is followed from memory, yet the poll still finds what another
    instance (another process) appended to the same run, and that it closed it."""
    path = tmp_path / "events.db"
    here = SQLiteEventLog(path, cross_process_poll_s=0.05)
    other = SQLiteEventLog(path)
    try:
        await here.open_run("r")
        await here.append(_event("r", 0))
        seen: list[int] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(_follow_ndjson_seqs, here, "r", seen)
            await until(lambda: seen == [0], "the follower to get the event appended here")
            await other.append(_event("r", 1))
            await until(lambda: seen == [0, 1], "the follower to get the other instance's append")
            await other.close_run("r")
        assert seen == [0, 1]
    finally:
        await other.aclose()
        await here.aclose()


async def test_sqlite_follower_woken_by_an_append_after_another_instance_appended_reads_the_line_between(
    tmp_path: Path,
) -> None:
    """The lines kept from this instance's commits are consecutive: one committed after another instance's append
    is not handed on as the next after the follower's, so the follower reads the other's line from the file first."""
    path = tmp_path / "events.db"
    here = SQLiteEventLog(path, cross_process_poll_s=NO_POLL_S)
    other = SQLiteEventLog(path)
    try:
        await here.open_run("r")
        seen: list[int] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(_follow_ndjson_seqs, here, "r", seen)
            await here.append(_event("r", 0))
            await here.append(_event("r", 1))
            await until(lambda: seen == [0, 1], "the follower to get the two events appended here")
            await other.append(_event("r", 2))
            await here.append(_event("r", 3))
            await until(lambda: len(seen) == 4, "the follower to get the other instance's event and the next")
            await here.close_run("r")
        assert seen == [0, 1, 2, 3]
    finally:
        await other.aclose()
        await here.aclose()


async def _follow_ndjson_seqs(log: SQLiteEventLog, run_id: str, seen: list[int]) -> None:
    async for piece in log.as_ndjson(run_id, follow=True):
        seen.extend(orjson.loads(line)["seq"] for line in piece.splitlines())


def test_open_event_log_specs(tmp_path: Path) -> None:
    assert isinstance(open_event_log("memory"), MemoryEventLog)
    sqlite_log = open_event_log(f"sqlite:{tmp_path / 'e.db'}")
    assert isinstance(sqlite_log, SQLiteEventLog)
    anyio.run(sqlite_log.aclose)
    redis_log = open_event_log("redis://127.0.0.1:1/0")
    assert isinstance(redis_log, RedisEventLog)
    anyio.run(redis_log.aclose)
    for bad in ("redis:x", "sqlite:", ""):
        with pytest.raises(ValueError, match='"memory", "sqlite:PATH" or "redis://HOST:PORT/DB"|needs a path'):
            open_event_log(bad)


def test_open_event_log_says_why_a_sqlite_file_cannot_be_opened(tmp_path: Path) -> None:
    """A directory or a file that is not a database used to escape as a raw sqlite3 error."""
    not_a_database = tmp_path / "notes.db"
    not_a_database.write_text("hello, not a database")
    for path in (tmp_path, not_a_database):
        with pytest.raises(ValueError, match=f"cannot open the event log '{path}': "):
            open_event_log(f"sqlite:{path}")


def test_a_sqlite_event_log_that_cannot_be_set_up_closes_its_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_database = tmp_path / "notes.db"
    not_a_database.write_text("hello, not a database")
    opened: list[sqlite3.Connection] = []
    connect = sqlite3.connect

    def tracking(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(connect(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(sqlite3, "connect", tracking)
    with pytest.raises(sqlite3.DatabaseError):
        SQLiteEventLog(not_a_database)
    assert len(opened) == 1
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        opened[0].execute("SELECT 1")


async def test_ndjson_lines_are_the_events_own_json(log: EventLog) -> None:
    stored = [await log.append(_event("n", i)) for i in range(2)]
    await log.close_run("n")
    lines = b"".join([piece async for piece in log.as_ndjson("n")])
    followed = b"".join([piece async for piece in log.as_ndjson("n", follow=True)])
    assert lines == followed == b"".join(event.to_json() + b"\n" for event in stored)


async def test_sqlite_appends_made_together_share_a_commit_and_each_is_committed_when_it_returns(
    tmp_path: Path,
) -> None:
    """Group commit: one transaction for the appends that arrive during a commit, none acknowledged before its own."""
    path = tmp_path / "events.db"
    log = SQLiteEventLog(path, cross_process_poll_s=NO_POLL_S)
    batches: list[int] = []
    run = log._db.run

    async def counting(fn: Any, *args: Any) -> Any:
        if fn is _append_all:
            batches.append(len(args[0]))
        return await run(fn, *args)

    log._db.run = counting  # type: ignore[method-assign]
    seen_by_another_connection: list[bool] = []

    async def append(n: int) -> None:
        stored = await log.append(_event(f"run-{n}", n))
        with sqlite3.connect(path) as other:
            row = other.execute("SELECT body FROM events WHERE run_id = ? AND seq = 0", (stored.run_id,)).fetchone()
        seen_by_another_connection.append(row is not None and orjson.loads(row[0])["text"] == f"t{n}")

    try:
        async with anyio.create_task_group() as tg:
            for n in range(40):
                tg.start_soon(append, n)
    finally:
        await log.aclose()
    assert seen_by_another_connection == [True] * 40
    assert sum(batches) == 40
    assert len(batches) < 40


async def test_a_live_ndjson_follower_gets_every_line_once_in_order_while_appends_race_it(log: EventLog) -> None:
    """Lines handed on from memory or read back, single appends and batches, a reader slower than the writer:
    each event exactly once, in seq order, and none waits for the poll (the test's poll is an hour)."""
    await log.append(_event("r", 0))
    got = bytearray()

    async def follower() -> None:
        async for piece in log.as_ndjson("r", follow=True):
            got.extend(piece)
            if len(got) % 3 == 0:
                await anyio.lowlevel.checkpoint()  # sometimes behind the writer

    async def writer() -> None:
        for n in range(1, 120):
            if n % 10 == 0:
                async with anyio.create_task_group() as tg:
                    for _ in range(3):
                        tg.start_soon(log.append, _event("r", n))
            else:
                await log.append(_event("r", n))
            await anyio.lowlevel.checkpoint()
        await log.close_run("r")

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(follower)
            tg.start_soon(writer)
    seqs = [orjson.loads(line)["seq"] for line in bytes(got).splitlines()]
    assert seqs == list(range(len(await log.read("r"))))
    assert len(seqs) == 1 + 119 + 11 * 2


async def test_sqlite_followers_take_a_commit_from_memory_and_a_start_within_one_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lines of a commit larger than RECENT_LINES (the lines of one big peer read) are kept whole for the
    followers that read up to it; a follower that starts within those lines reads the file, and gets the rest."""
    log = SQLiteEventLog(tmp_path / "events.db", cross_process_poll_s=NO_POLL_S)
    file_reads: list[int] = []
    page = sqlite_module._page

    def counted(conn: sqlite3.Connection, run_id: str, after_seq: int) -> tuple[bool, list[tuple[int, bytes]]]:
        file_reads.append(after_seq)
        return page(conn, run_id, after_seq)

    monkeypatch.setattr(sqlite_module, "_page", counted)
    try:
        await log.open_run("r")
        await log.append(_event("r", 0))
        async with aclosing(
            log.append_all([_event("r", n) for n in range(1, 2 + 2 * sqlite_module.RECENT_LINES)])
        ) as s:
            stored = [event.seq async for event in s]
        assert stored == list(range(1, 2 + 2 * sqlite_module.RECENT_LINES))
        seen: list[int] = []
        async with aclosing(log.as_ndjson("r", after_seq=0, follow=True)) as pieces:  # it had read up to the commit
            async for piece in pieces:
                seen.extend(orjson.loads(line)["seq"] for line in piece.splitlines())
                if seen[-1] == stored[-1]:
                    break
        assert seen == stored and file_reads == [], "every line from memory"
        within = stored[len(stored) // 2]
        rest = b"".join([piece async for piece in log.as_ndjson("r", after_seq=within)])
        assert [orjson.loads(line)["seq"] for line in rest.splitlines()] == list(range(within + 1, stored[-1] + 1))
        assert file_reads == [within]
    finally:
        await log.aclose()
