"""Task stores: the memory store's bound and expiry, the SQLite store's persistence, the Redis store, open_store."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from agent_server import MemoryTaskStore, SQLiteTaskStore, StoreFull, TaskStore, open_store
from agent_server.stores import SQLiteDatabase, StoreSpec, TaskFilter, parse_store_spec
from agent_server.stores.redis import RedisTaskStore
from protocol import Artifact, ArtifactEvent, StatusEvent, Task, TaskState, TaskStatus, TextPart

pytestmark = pytest.mark.anyio


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _task(task_id: str, state: TaskState = TaskState.COMPLETED) -> Task:
    status = TaskStatus(state=state, timestamp="2025-01-01T00:00:00.000Z")
    return Task(id=task_id, session_id="s", status=status, metadata={"cost_usd": 0.0})


def _events(task_id: str) -> list[StatusEvent | ArtifactEvent]:
    return [
        StatusEvent(seq=0, id=task_id, status=TaskStatus(state=TaskState.WORKING, timestamp="t0")),
        ArtifactEvent(seq=1, id=task_id, artifact=Artifact(parts=[TextPart(text="x")], append=True), cost_usd=0.1),
        StatusEvent(seq=2, id=task_id, status=TaskStatus(state=TaskState.COMPLETED, timestamp="t2"), final=True),
    ]


async def _roundtrip(store: TaskStore) -> None:
    await store.save_task(_task("t1", TaskState.WORKING))
    assert await store.last_seq("t1") == -1
    for event in _events("t1"):
        await store.append_event("t1", event)
    assert await store.last_seq("t1") == 2 and await store.last_seq("unknown") == -1
    await store.save_task(_task("t1"))
    loaded = await store.load_task("t1")
    assert loaded == _task("t1")
    assert await store.read_events("t1") == _events("t1")
    assert [e.seq for e in await store.read_events("t1", after_seq=0)] == [1, 2]
    assert await store.read_events("t1", after_seq=2) == []
    assert await store.load_task("unknown") is None and await store.read_events("unknown") == []
    await store.delete_task("t1")
    assert await store.load_task("t1") is None and await store.read_events("t1") == []
    assert await store.last_seq("t1") == -1


async def test_memory_store_roundtrip() -> None:
    await _roundtrip(MemoryTaskStore())


async def test_sqlite_store_roundtrip(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "t.db")
    try:
        await _roundtrip(store)
    finally:
        await store.aclose()


async def test_redis_store_roundtrip(redis_url: str) -> None:
    store = RedisTaskStore(redis_url)
    try:
        await _roundtrip(store)
    finally:
        await store.aclose()


async def test_memory_store_hands_out_copies() -> None:
    store = MemoryTaskStore()
    task = _task("t")
    await store.save_task(task)
    task.metadata["cost_usd"] = 5.0
    loaded = await store.load_task("t")
    assert loaded is not None and loaded.metadata["cost_usd"] == 0.0
    loaded.metadata["cost_usd"] = 7.0
    assert (await store.load_task("t")).metadata["cost_usd"] == 0.0  # type: ignore[union-attr]


async def test_memory_store_is_bounded_and_evicts_the_oldest_finished_task_first() -> None:
    clock = _Clock()
    store = MemoryTaskStore(max_tasks=3, clock=clock)
    await store.save_task(_task("old"))
    clock.now += 1
    await store.save_task(_task("running", TaskState.WORKING))
    clock.now += 1
    await store.save_task(_task("newer"))
    clock.now += 1
    await store.save_task(_task("old"))  # an update makes it the most recent
    await store.save_task(_task("fourth"))
    assert store.task_count == 3
    assert await store.load_task("newer") is None
    assert {t for t in ("old", "running", "fourth") if await store.load_task(t)} == {"old", "running", "fourth"}


async def test_memory_store_never_evicts_running_tasks_and_says_when_full() -> None:
    store = MemoryTaskStore(max_tasks=2)
    await store.save_task(_task("a", TaskState.WORKING))
    await store.save_task(_task("b", TaskState.SUBMITTED))
    with pytest.raises(StoreFull):
        await store.save_task(_task("c"))
    await store.save_task(_task("a"))  # updating a known task needs no room
    await store.save_task(_task("c"))
    assert await store.load_task("a") is None and await store.load_task("b") is not None


async def test_memory_store_expires_tasks_not_running_after_the_ttl() -> None:
    clock = _Clock()
    store = MemoryTaskStore(ttl_s=60, clock=clock)
    await store.save_task(_task("done"))
    await store.save_task(_task("waiting", TaskState.INPUT_REQUIRED))
    await store.save_task(_task("running", TaskState.WORKING))
    await store.append_event("done", _events("done")[0])
    clock.now += 59
    assert await store.load_task("done") is not None
    clock.now += 2
    assert await store.load_task("done") is None and await store.read_events("done") == []
    assert await store.expire() == 1  # "waiting"; "done" went on access
    assert await store.load_task("running") is not None
    assert store.task_count == 1


async def test_memory_store_evicts_and_sweeps_the_idle_tasks_behind_running_ones_in_update_order() -> None:
    """A task that stops running joins the idle ones as their most recent, one that runs again leaves them."""
    clock = _Clock()
    store = MemoryTaskStore(max_tasks=4, ttl_s=10, clock=clock)
    await store.save_task(_task("long", TaskState.WORKING))  # the oldest, running all along
    await store.save_task(_task("a"))
    await store.save_task(_task("b", TaskState.WORKING))
    clock.now += 5
    await store.save_task(_task("b"))  # b ends: the most recent idle task
    await store.save_task(_task("a", TaskState.WORKING))  # a runs again: not to be evicted
    await store.save_task(_task("c"))
    await store.save_task(_task("d"))  # full: b goes, the least recently updated idle task
    assert {t for t in ("long", "a", "b", "c", "d") if await store.load_task(t)} == {"long", "a", "c", "d"}
    clock.now += 11
    await store.save_task(_task("e"))  # c and d have expired: swept, the running tasks kept
    assert store.task_count == 3
    assert {t for t in ("long", "a", "e") if await store.load_task(t)} == {"long", "a", "e"}


async def test_memory_store_sweeps_expired_tasks_when_saving_new_ones() -> None:
    clock = _Clock()
    store = MemoryTaskStore(ttl_s=10, clock=clock)
    for i in range(5):
        await store.save_task(_task(f"t{i}"))
    clock.now += 11
    await store.save_task(_task("fresh"))
    assert store.task_count == 1


async def test_sqlite_store_keeps_tasks_and_events_across_a_reopen(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "tasks.db"
    first = SQLiteTaskStore(path)
    await first.save_task(_task("t1"))
    for event in _events("t1"):
        await first.append_event("t1", event)
    await first.aclose()
    second = SQLiteTaskStore(path)
    try:
        assert await second.load_task("t1") == _task("t1")
        assert await second.read_events("t1") == _events("t1")
    finally:
        await second.aclose()


async def test_sqlite_store_expires_old_tasks_but_not_running_ones(tmp_path: Path) -> None:
    clock = _Clock()
    store = SQLiteTaskStore(tmp_path / "t.db", ttl_s=60, clock=clock)
    try:
        await store.save_task(_task("done"))
        await store.append_event("done", _events("done")[0])
        await store.save_task(_task("running", TaskState.WORKING))
        clock.now += 61
        assert await store.expire() == 1
        assert await store.load_task("done") is None and await store.read_events("done") == []
        assert await store.load_task("running") is not None
    finally:
        await store.aclose()


async def test_a_closed_sqlite_store_says_so(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "t.db")
    await store.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await store.load_task("x")


async def test_open_store_specs(tmp_path: Path) -> None:
    assert isinstance(open_store("memory"), MemoryTaskStore)
    store = open_store(f"sqlite:{tmp_path / 'x.db'}")
    await store.aclose()
    assert isinstance(store, SQLiteTaskStore) and store.path == tmp_path / "x.db"
    store = open_store("redis://127.0.0.1:1/0")
    await store.aclose()
    assert isinstance(store, RedisTaskStore) and store.target.prefix == "switchboard:"
    for bad in ("redis:x", "redis://127.0.0.1:x/0", "redis://h/zero", "sqlite:", ""):
        with pytest.raises(ValueError, match="store"):
            open_store(bad)


async def test_open_store_says_why_a_sqlite_file_cannot_be_opened(tmp_path: Path) -> None:
    """A directory or a file that is not a database used to escape as a raw sqlite3 traceback."""
    not_a_database = tmp_path / "notes.db"
    not_a_database.write_text("hello")
    for path in (tmp_path, not_a_database):
        with pytest.raises(ValueError, match="cannot open the task store"):
            open_store(f"sqlite:{path}")


async def test_sqlite_store_expires_finished_tasks_after_an_hour_by_default_like_the_memory_store(
    tmp_path: Path,
) -> None:
    clock = _Clock()
    store = SQLiteTaskStore(tmp_path / "t.db", clock=clock)
    try:
        assert store.ttl_s == MemoryTaskStore().ttl_s == 3600
        for task in (_task("done"), _task("waiting", TaskState.INPUT_REQUIRED), _task("running", TaskState.WORKING)):
            await store.save_task(task)
        clock.now += 3599
        assert await store.expire() == 0
        clock.now += 2
        assert await store.expire() == 2
        assert await store.load_task("done") is None and await store.load_task("waiting") is None
        assert await store.load_task("running") is not None
    finally:
        await store.aclose()


async def test_a_busy_sqlite_store_queues_calls_without_taking_the_shared_worker_threads(tmp_path: Path) -> None:
    """Waiting callers used to park worker threads on a lock: 50 of them starved every to_thread user."""
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # every write now waits on SQLite's busy timeout
    limiter = anyio.to_thread.current_default_thread_limiter()
    try:
        async with anyio.create_task_group() as task_group:
            for n in range(50):
                task_group.start_soon(store.save_task, _task(f"t{n}"))
            try:
                await (
                    anyio.wait_all_tasks_blocked()
                )  # one save waits on SQLite's busy timeout, the rest queue behind it
                borrowed = limiter.borrowed_tokens
                with anyio.move_on_after(3) as waited:  # well inside the 5 s busy timeout that holds the saves
                    await anyio.to_thread.run_sync(lambda: "a sync tool")
            finally:
                blocker.execute("COMMIT")
        assert borrowed <= 1 and not waited.cancelled_caught
        assert await store.load_task("t49") is not None
    finally:
        blocker.close()
        await store.aclose()


async def test_a_sqlite_call_finishes_before_its_cancelled_caller_goes_on_and_closing_ends_its_thread(
    tmp_path: Path,
) -> None:
    path = tmp_path / "d.db"
    db = SQLiteDatabase(path, schema="CREATE TABLE t (x)")
    started, release = threading.Event(), threading.Event()
    caught: list[bool] = []

    def slow_insert(conn: sqlite3.Connection) -> None:
        started.set()
        release.wait(10)
        conn.execute("INSERT INTO t VALUES (1)")

    def count(conn: sqlite3.Connection) -> int:
        return int(conn.execute("SELECT count(*) FROM t").fetchone()[0])

    async def caller(scope: anyio.CancelScope) -> None:
        with scope:
            await db.run(slow_insert)
        caught.append(scope.cancelled_caught)

    try:
        scope = anyio.CancelScope()
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(caller, scope)
            await anyio.to_thread.run_sync(started.wait, 10)
            scope.cancel()
            await anyio.wait_all_tasks_blocked()
            assert caught == []  # cancelled, yet still waiting for the call it started
            release.set()
        assert caught == [True] and await db.run(count) == 1
    finally:
        release.set()
        await db.aclose()
    with pytest.raises(RuntimeError, match="is closed"):
        await db.run(count)
    assert not [thread for thread in threading.enumerate() if thread.name == f"sqlite {path}"]


def test_parse_store_spec_is_the_one_parser_of_store_specs(tmp_path: Path) -> None:
    assert parse_store_spec("memory") == StoreSpec("memory", None) == ("memory", None)
    assert parse_store_spec("sqlite:data/t.db") == ("sqlite", "data/t.db")
    assert parse_store_spec("sqlite", default_path=tmp_path / "e.db") == ("sqlite", str(tmp_path / "e.db"))
    with pytest.raises(ValueError, match='a sqlite event log needs a path, e.g. "sqlite:events.db"'):
        parse_store_spec("sqlite", what="event log")
    with pytest.raises(ValueError, match="a sqlite task store needs a path"):
        parse_store_spec("sqlite:", what="task store", default_path="x.db")
    assert parse_store_spec("redis://h:1/2?prefix=p") == ("redis", "redis://h:1/2?prefix=p")
    with pytest.raises(ValueError, match="""unknown task store 'redis:x'; use "memory", "sqlite:PATH" or "redis://"""):
        parse_store_spec("redis:x", what="task store")
    with pytest.raises(ValueError, match='use "memory", "sqlite", "sqlite:PATH" or "redis://HOST:PORT/DB"'):
        parse_store_spec("", default_path="x.db")


def test_a_sqlite_database_that_cannot_be_set_up_closes_its_connection(tmp_path: Path) -> None:
    not_a_database = tmp_path / "notes.db"
    not_a_database.write_text("hello, not a database")
    with _tracked_connections() as opened, pytest.raises(sqlite3.DatabaseError):
        SQLiteDatabase(not_a_database, schema="CREATE TABLE t (x)")
    assert len(opened) == 1 and _is_closed(opened[0])


@contextmanager
def _tracked_connections() -> Iterator[list[sqlite3.Connection]]:
    """Every sqlite3 connection opened inside, wherever from."""
    opened: list[sqlite3.Connection] = []
    connect = sqlite3.connect

    def tracking(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)
        opened.append(conn)
        return conn

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlite3, "connect", tracking)
        yield opened


def _is_closed(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        return True
    return False


async def _listing(store: TaskStore) -> None:
    """Three tasks saved in order, each status a second later: pages, filters and a foreign cursor."""
    rows = [
        ("alice", "s1", TaskState.COMPLETED),
        ("bob", "s1", TaskState.WORKING),
        ("alice", "s2", TaskState.COMPLETED),
    ]
    for number, (owner, session, state) in enumerate(rows, start=1):
        status = TaskStatus(state=state, timestamp=f"2025-01-01T00:00:0{number}.000Z")
        await store.save_task(Task(id=f"t{number}", session_id=session, status=status), owner)

    async def ids(where: TaskFilter, limit: int = 10, cursor: str = "") -> list[str]:
        return [task.id for task in (await store.list_tasks(where, limit=limit, cursor=cursor)).tasks]

    first = await store.list_tasks(TaskFilter(), limit=2)
    assert [t.id for t in first.tasks] == ["t3", "t2"] and first.total == 3 and first.next_cursor
    last = await store.list_tasks(TaskFilter(), limit=2, cursor=first.next_cursor)
    assert [t.id for t in last.tasks] == ["t1"] and last.next_cursor == "" and last.total == 3
    assert await ids(TaskFilter(owned_by="alice")) == ["t3", "t1"]
    assert await ids(TaskFilter(session_id="s1")) == ["t2", "t1"]
    assert await ids(TaskFilter(state=TaskState.COMPLETED, owned_by="alice", session_id="s2")) == ["t3"]
    assert await ids(TaskFilter(status_after="2025-01-01T00:00:02.000Z")) == ["t3", "t2"]
    with pytest.raises(ValueError, match="not a page token"):
        await store.list_tasks(TaskFilter(), limit=1, cursor="garbage")


async def test_every_store_lists_tasks_newest_first_in_pages_and_filtered(tmp_path: Path, redis_url: str) -> None:
    clock = _Clock()

    def ticking() -> float:
        clock.now += 1
        return clock.now

    sqlite_store = SQLiteTaskStore(tmp_path / "t.db")
    redis_store = RedisTaskStore(redis_url)
    try:
        for store in (MemoryTaskStore(clock=ticking), sqlite_store, redis_store):
            await _listing(store)
    finally:
        await sqlite_store.aclose()
        await redis_store.aclose()
