"""The takeover of runs a stopped process left open, in-process: what the stores hold is what a killed gateway leaves.

A turn killed during a local model step is redone at the next start (``run_resumed`` with
``step`` redone) and its session gets the answer; a run that is no turn and no call ends
``run_failed`` as interrupted, as before takeovers. On Redis, one replica alone claims a
dead writer's run, and the live log hands such runs to the service's takeover.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from agent_server.stores.redis_settings import RedisSettings
from gateway import Agent
from gateway.errors import RunClosedError
from gateway.event_log import SQLiteEventLog
from gateway.event_log.redis import RedisEventLog
from gateway.recording.events import Event, EventType
from gateway.service import GatewayService
from gateway.swarm.sessions import SQLiteSessionStore
from tests.support.waiting import until

pytestmark = pytest.mark.anyio

SHORT = RedisSettings(lease_s=0.3, lock_wait_s=5.0, follow_block_s=0.5)


async def _left_mid_turn(tmp_path: Path, run_id: str) -> None:
    """What a gateway killed during a turn's model call leaves: the session with the message and the mark, the run."""
    sessions = SQLiteSessionStore(tmp_path / "sessions.db")
    events = SQLiteEventLog(tmp_path / "events.db")
    session = await sessions.load("s1")
    session.history.append({"role": "user", "content": "hello there"})
    session.open_run = run_id
    await sessions.save(session)
    await events.open_run(run_id)
    started = {"session_id": "s1", "agent": "assistant", "user_message": "hello there"}
    await events.append(Event.create(EventType.RUN_STARTED, run_id, **started))
    await sessions.close()
    await events.aclose()


async def test_a_turn_left_during_a_local_step_is_redone_at_start_and_the_session_gets_its_answer(
    tmp_path: Path,
) -> None:
    await _left_mid_turn(tmp_path, "run_left")
    service = GatewayService(
        Agent("assistant", "Answer briefly."),
        session_store=SQLiteSessionStore(tmp_path / "sessions.db"),
        event_log=SQLiteEventLog(tmp_path / "events.db"),
    )
    async with service:
        with anyio.fail_after(30):
            followed = [event async for event in service.event_log.follow("run_left")]
        session = await service.session("s1")
    assert [e.seq for e in followed] == list(range(len(followed)))
    assert followed[1].type == "run_resumed"
    assert followed[1].fields["step"] == "redone" and followed[1].fields["after_seq"] == 0
    assert followed[-1].type == "run_completed"
    assert session.open_run is None
    assert [m["role"] for m in session.history] == ["user", "assistant"]
    assert session.history[-1]["content"] == followed[-1].fields["content"]


async def test_a_run_that_is_no_turn_and_no_call_is_closed_as_interrupted_before_the_service_answers(
    tmp_path: Path,
) -> None:
    log = SQLiteEventLog(tmp_path / "events.db")
    await log.append(Event.create(EventType.RUN_STARTED, "stray"))
    await log.aclose()
    async with GatewayService(event_log=SQLiteEventLog(tmp_path / "events.db")) as service:
        assert await service.event_log.is_closed("stray")
        last = (await service.event_log.read("stray"))[-1]
    assert last.type == "run_failed" and last.fields["error_type"] == "Interrupted"


@pytest.fixture
async def three_logs(redis_url: str) -> AsyncIterator[tuple[RedisEventLog, RedisEventLog, RedisEventLog]]:
    logs = tuple(RedisEventLog(redis_url, settings=SHORT) for _ in range(3))
    try:
        yield logs  # type: ignore[misc]
    finally:
        for log in logs:
            await log.aclose()


async def test_on_redis_one_replica_alone_claims_a_dead_writer_s_run_and_the_live_log_hands_runs_to_adopt(
    three_logs: tuple[RedisEventLog, RedisEventLog, RedisEventLog],
) -> None:
    dead, first, second = three_logs
    await dead._liveness.renew()  # it renewed its mark once and stopped, as a killed replica does
    await dead.open_run("orphan")
    await dead.append(Event.create(EventType.RUN_STARTED, "orphan"))
    await dead.open_run("another")
    await dead.append(Event.create(EventType.RUN_STARTED, "another"))
    adopted: list[str] = []

    async def adopt(run_id: str) -> bool:
        adopted.append(run_id)
        return True

    async with first.running(adopt), second.running(adopt):  # two live replicas sweep: each run goes to one
        await until(lambda: sorted(adopted) == ["another", "orphan"], "the live logs to hand both runs over")
        assert not await first.claim_run("orphan") and not await second.claim_run("orphan"), "claimed, by a live one"
        assert await second.abandoned_runs() == []
        assert await second._sweep(adopt) == [] and await first._sweep(adopt) == []  # sweeps after the claims
        assert sorted(adopted) == ["another", "orphan"], "a run taken over is never handed over again"
        assert not await first.is_closed("orphan") and not await first.is_closed("another")


async def test_on_redis_a_writer_that_wakes_up_after_its_run_was_taken_over_can_neither_append_nor_close_it(
    three_logs: tuple[RedisEventLog, RedisEventLog, RedisEventLog],
) -> None:
    frozen, taker, _ = three_logs
    await frozen.open_run("held")  # its mark of life was never renewed: to the others it is dead
    await frozen.append(Event.create(EventType.RUN_STARTED, "held"))
    assert await taker.claim_run("held")
    with pytest.raises(RunClosedError):
        await frozen.append(Event.create(EventType.RUN_FAILED, "held", error="late", error_type="Late"))
    await frozen.close_run("held")
    assert not await taker.is_closed("held")
    resumed = await taker.append(Event.create(EventType.RUN_RESUMED, "held", by="taker", after_seq=0, step="redone"))
    assert resumed.seq == 1
