"""The Redis stores' own rules, each between two store objects that share only the Redis server (as replicas do):
the session lock and its fencing, the event log's live reads and its closing of a dead writer's runs, the registry,
and the task store handing a dead process's task to the TaskManager that heals it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from agent_server import TaskManager
from agent_server.stores.redis import RedisTaskStore
from agent_server.stores.redis_client import connect
from agent_server.stores.redis_settings import RedisSettings, parse_redis_spec
from agent_server.testing import scripted_agent
from gateway.calls.coordinator import Gateway
from gateway.config.model import ToolConfig
from gateway.errors import RunClosedError, SessionBusy, SessionConflictError, SessionLockLost
from gateway.event_log.base import INTERRUPTED
from gateway.event_log.redis import RedisEventLog
from gateway.recording.events import Event, EventType
from gateway.registrations import MemoryRegistryStore, RegistryStore, SQLiteRegistryStore, open_registry
from gateway.registrations.redis import RedisRegistryStore
from gateway.service import GatewayService
from gateway.swarm.sessions.redis import RedisSessionStore
from protocol import Task, TaskState, TaskStatus
from tests.support.redis import LocalRedis
from tests.support.waiting import until

pytestmark = pytest.mark.anyio

SHORT = RedisSettings(lease_s=0.3, lock_wait_s=5.0, follow_block_s=0.5)
# For a lease that must hold while the test looks: a starved event loop (two suites on two cores)
# still renews in time; only a renewal later than lease - renew_every (1 s) rightly loses it.
STEADY = RedisSettings(lease_s=1.5, lock_wait_s=10.0, follow_block_s=0.5)


async def test_after_a_redis_restart_no_call_fails_on_a_connection_the_old_server_closed(tmp_path: Path) -> None:
    """Idle pooled connections are checked before use, so none that the killed server closed fails a later call."""
    with LocalRedis(tmp_path / "redis") as redis:
        client = connect(parse_redis_spec(f"{redis.url}/0", "test store"), RedisSettings())
        try:
            async with anyio.create_task_group() as group:  # at once, so the pool holds several connections
                for index in range(6):
                    group.start_soon(client.set, f"k{index}", index)
            await anyio.to_thread.run_sync(redis.kill)
            await anyio.to_thread.run_sync(redis.start)
            answers: list[object] = []

            async def read(key: str) -> None:
                try:
                    answers.append(await client.get(key))
                except Exception as exc:  # what failed is the finding
                    answers.append(exc)

            async with anyio.create_task_group() as group:
                for index in range(6):
                    group.start_soon(read, f"k{index}")
            assert sorted(map(repr, answers)) == sorted(repr(str(i).encode()) for i in range(6)), answers
        finally:
            await client.aclose()


def _event(run_id: str, n: int) -> Event:
    return Event.create(EventType.AGENT_TOOL_PROGRESS, run_id, chunk_index=n)


async def test_a_session_lock_holds_across_store_objects_and_the_next_holder_gets_it_on_release(
    redis_url: str,
) -> None:
    first, second = RedisSessionStore(redis_url, settings=STEADY), RedisSessionStore(redis_url, settings=STEADY)
    order: list[str] = []
    async with first.running(), second.running(), anyio.create_task_group() as group:
        async with first.lock("s"):
            group.start_soon(_hold, second, "s", order)
            await anyio.sleep(1.5 * STEADY.lease_s)  # longer than a lease: renewals keep the first holder's lock
            order.append("first done")
    assert order == ["first done", "second held"]


async def _hold(store: RedisSessionStore, session_id: str, order: list[str]) -> None:
    async with store.lock(session_id):
        order.append("second held")


async def test_a_lock_whose_lease_ran_out_passes_to_another_and_the_late_save_is_refused(redis_url: str) -> None:
    """The first holder stops renewing (a frozen replica); its save after the second holder's is fenced off."""
    frozen, other = RedisSessionStore(redis_url, settings=SHORT), RedisSessionStore(redis_url, settings=SHORT)
    frozen._renew_held = _nothing  # type: ignore[method-assign]
    async with frozen.running(), other.running():
        async with frozen.lock("s"):
            session = await frozen.load("s")
            async with other.lock("s"):
                taken_over = await other.load("s")
                taken_over.history.append({"role": "user", "content": "the new holder's"})
                await other.save(taken_over)
            session.history.append({"role": "user", "content": "the frozen holder's"})
            with pytest.raises(SessionLockLost, match="lock on it expired"):
                await frozen.save(session)
            with pytest.raises(SessionLockLost):
                await frozen.delete("s")
    stored = await other.load("s")
    assert stored.version == 1 and stored.history == [{"role": "user", "content": "the new holder's"}]
    await frozen.close()
    await other.close()


async def _nothing() -> None:
    return None


async def test_a_save_from_outside_the_lock_while_another_process_holds_it_is_refused(redis_url: str) -> None:
    holder, outsider = RedisSessionStore(redis_url, settings=STEADY), RedisSessionStore(redis_url, settings=STEADY)
    async with holder.running(), holder.lock("s"):
        with pytest.raises(SessionConflictError):
            await outsider.save(await outsider.load("s"))
    await outsider.save(await outsider.load("s"))
    assert (await holder.load("s")).version == 1
    await holder.close()
    await outsider.close()


async def test_a_turn_waits_for_a_held_session_at_most_lock_wait(redis_url: str) -> None:
    patient = RedisSettings(lease_s=5.0, lock_wait_s=0.3)
    holder, waiter = RedisSessionStore(redis_url, settings=patient), RedisSessionStore(redis_url, settings=patient)
    async with holder.running(), waiter.running(), holder.lock("s"):
        with pytest.raises(SessionBusy, match="busy"):
            async with waiter.lock("s"):
                pass
    await holder.close()
    await waiter.close()


async def test_a_lock_is_used_only_while_the_store_runs(redis_url: str) -> None:
    store = RedisSessionStore(redis_url)
    with pytest.raises(RuntimeError, match=r"store\.running\(\)"):
        async with store.lock("s"):
            pass
    await store.close()


@pytest.fixture
async def logs(redis_url: str) -> AsyncIterator[tuple[RedisEventLog, RedisEventLog]]:
    first, second = RedisEventLog(redis_url, settings=SHORT), RedisEventLog(redis_url, settings=SHORT)
    try:
        yield first, second
    finally:
        await first.aclose()
        await second.aclose()


async def test_a_follower_on_one_log_sees_what_another_appends_live_and_ends_at_its_close(
    logs: tuple[RedisEventLog, RedisEventLog],
) -> None:
    writer, reader = logs
    await writer.open_run("r", owner="ada")
    assert await reader.has_run("r") and await reader.run_owner("r") == "ada"
    seen: list[int] = []
    async with anyio.create_task_group() as group:

        async def follow() -> None:
            async for event in reader.follow("r"):
                seen.append(event.seq)

        group.start_soon(follow)
        for n in range(3):
            await writer.append(_event("r", n))
            await until(lambda n=n: seen == list(range(n + 1)), f"event {n} to reach the other log's follower")
        await writer.close_run("r")
    assert seen == [0, 1, 2] and await reader.is_closed("r")
    with pytest.raises(RunClosedError, match="is closed"):
        await writer.append(_event("r", 3))
    assert await reader.list_runs(owner="ada") == ["r"] and await reader.list_runs(owner="bob") == []


async def test_a_follower_whose_empty_read_is_followed_by_the_close_still_gets_the_last_events(
    logs: tuple[RedisEventLog, RedisEventLog],
) -> None:
    """The run ends between a read that found nothing and the check whether it is closed: its end is not lost."""
    writer, reader = logs
    await writer.append(_event("late", 0))
    is_closed = reader.is_closed

    async def closed_meanwhile(run_id: str) -> bool:
        if not await writer.is_closed(run_id):
            await writer.append(_event(run_id, 1))
            await writer.close_run(run_id)
        return await is_closed(run_id)

    reader.is_closed = closed_meanwhile  # type: ignore[method-assign]
    with anyio.fail_after(10 * SHORT.follow_block_s + 5):
        seen = [event.seq async for event in reader.follow("late")]
    assert seen == [0, 1]


async def test_aclose_ends_a_follower_waiting_in_redis(logs: tuple[RedisEventLog, RedisEventLog]) -> None:
    log, _ = logs
    await log.open_run("waiting")
    done = anyio.Event()

    async def follower() -> None:
        async for _ in log.follow("waiting"):
            pass
        done.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(follower)
            await anyio.wait_all_tasks_blocked()
            await log.aclose()
            await done.wait()


async def test_a_live_log_closes_the_runs_of_a_writer_whose_lease_expired_and_leaves_live_ones(
    logs: tuple[RedisEventLog, RedisEventLog],
) -> None:
    """The dead writer renewed its mark once and stopped, as a killed replica does; the live one sweeps as it runs."""
    dead, live = logs
    await dead._liveness.renew()
    await dead.open_run("orphan")
    await dead.append(_event("orphan", 0))
    followed: list[str] = []
    async with live.running():
        await live.open_run("alive")
        await live.append(_event("alive", 0))
        with anyio.fail_after(10):
            async for event in live.follow("orphan"):
                followed.append(event.type)
        assert not await live.is_closed("alive")
        assert await live.close_abandoned_runs() == [], "closed once, and never a live writer's run"
    assert followed == ["agent_tool_progress", "run_failed"]
    last = (await live.read("orphan"))[-1]
    assert last.fields["error"] == INTERRUPTED and last.fields["error_type"] == "Interrupted"


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def registry(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RegistryStore]:
    store: RegistryStore
    if request.param == "memory":
        store = MemoryRegistryStore()
    elif request.param == "sqlite":
        store = SQLiteRegistryStore(tmp_path / "sessions.db")
    else:
        store = RedisRegistryStore(request.getfixturevalue("redis_url"))
    try:
        yield store
    finally:
        await store.close()


async def test_a_registry_refuses_a_taken_name_keeps_removals_and_moves_its_version(registry: RegistryStore) -> None:
    start = await registry.version()
    assert await registry.register("agent", "echo", {"url": "http://a"})
    assert not await registry.register("agent", "echo", {"url": "http://b"})
    assert await registry.register("tool", "echo", {"config": {}}), "kinds have names of their own"
    after_adds = await registry.version()
    await registry.unregister("agent", "echo")
    await registry.unregister("tool", "configured")
    assert await registry.version() != after_adds != start
    assert [(e.kind, e.name, e.data) for e in await registry.entries()] == [
        ("agent", "echo", None),
        ("tool", "echo", {"config": {}}),
        ("tool", "configured", None),
    ]
    assert await registry.register("agent", "echo", {"url": "http://c"}), "a removed name can be registered again"
    assert (await registry.entries())[0].data == {"url": "http://c"}


async def test_open_registry_specs(tmp_path: Path) -> None:
    assert isinstance(open_registry("memory"), MemoryRegistryStore)
    sqlite_store = open_registry(f"sqlite:{tmp_path / 'r.db'}")
    assert isinstance(sqlite_store, SQLiteRegistryStore)
    await sqlite_store.close()
    assert isinstance(open_registry("redis://127.0.0.1:1/0"), RedisRegistryStore)
    with pytest.raises(ValueError, match="cannot open the registry"):
        open_registry(f"sqlite:{tmp_path}")


async def test_tools_defined_and_removed_through_the_service_stay_so_after_a_restart_on_sqlite(tmp_path: Path) -> None:
    """Also over the configuration's tools: one removed stays removed, one defined anew is the API's."""
    path = tmp_path / "sessions.db"

    def configured() -> Gateway:
        gateway = Gateway()
        for name in ("dropped", "redefined"):
            gateway.add_tool(ToolConfig(name=name, agent="http://127.0.0.1:9").agent_tool())
        return gateway

    async with GatewayService(gateway=configured(), registry=SQLiteRegistryStore(path)) as service:
        await service.add_tool(ToolConfig(name="research", agent="http://127.0.0.1:9", mode="streaming"))
        await service.add_tool(ToolConfig(name="gone", agent="http://127.0.0.1:9"))
        await service.remove_tool("gone")
        await service.remove_tool("dropped")
        await service.remove_tool("redefined")
        await service.add_tool(ToolConfig(name="redefined", agent="http://127.0.0.1:9", mode="streaming"))
    async with GatewayService(gateway=configured(), registry=SQLiteRegistryStore(path)) as restarted:
        assert sorted(restarted.gateway.tools) == ["redefined", "research"]
        assert restarted.get_tool("research").mode.kind == "streaming"
        assert restarted.get_tool("redefined").mode.kind == "streaming"


async def test_a_task_left_running_by_a_process_that_died_is_closed_by_another_replica(redis_url: str) -> None:
    dead, live = RedisTaskStore(redis_url, settings=STEADY), RedisTaskStore(redis_url, settings=STEADY)
    await dead._liveness.renew()
    await dead.save_task(Task(id="t", session_id="s", status=TaskStatus(state=TaskState.WORKING), metadata={}))
    manager = TaskManager(scripted_agent(), live)
    async with manager.running():
        assert await live.running_elsewhere("t"), "its process is alive for one lease"
        assert (await manager.get("t")).status.state is TaskState.WORKING
        await until(lambda: _not_elsewhere(live), "the dead process's mark to expire")
        task = await manager.get("t")
    assert task.status.state is TaskState.FAILED
    assert (await live.read_events("t"))[-1].final
    await dead.aclose()
    await live.aclose()


async def _not_elsewhere(store: RedisTaskStore) -> bool:
    return not await store.running_elsewhere("t")
