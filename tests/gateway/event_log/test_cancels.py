"""Cancels asked of a run on a replica that does not write it: left in the shared log, taken by the run's writer.

Two or three Redis logs on one prefix stand for replicas; a log of one process stores no request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agent_server.stores.redis_settings import RedisSettings
from gateway.event_log import MemoryEventLog
from gateway.event_log.cancels import CancelAsk, CancelRequest
from gateway.event_log.redis import RedisEventLog
from gateway.recording.events import Event, EventType
from tests.support.event_logs import replica_logs
from tests.support.waiting import until

pytestmark = pytest.mark.anyio

SHORT = RedisSettings(lease_s=0.3, lock_wait_s=5.0, follow_block_s=0.5)
ASKED = CancelRequest("alice", "asked by alice", "api")


class Taker:
    """A service's ``take_cancel``: records what it was handed; ``ready`` is whether the run is cancellable yet."""

    def __init__(self, ready: bool = True) -> None:
        self.ready = ready
        self.taken: list[tuple[str, CancelRequest]] = []

    async def __call__(self, run_id: str, request: CancelRequest) -> bool:
        if self.ready:
            self.taken.append((run_id, request))
        return self.ready


@pytest.fixture
async def logs(redis_url: str) -> AsyncIterator[list[RedisEventLog]]:
    async with replica_logs(redis_url, SHORT, 3) as opened:
        yield opened


async def _open(log: RedisEventLog, run_id: str) -> None:
    await log.open_run(run_id, owner="alice")
    await log.append(Event.create(EventType.RUN_STARTED, run_id))


async def test_a_request_goes_to_the_run_s_writer_alone_which_keeps_it_until_the_run_is_cancellable(
    logs: list[RedisEventLog],
) -> None:
    writer, other, _ = logs
    await _open(writer, "far")
    assert await other.request_cancel("far", ASKED) is CancelAsk.STORED
    elsewhere = Taker()
    assert await other.take_cancels(elsewhere) == [] and elsewhere.taken == [], "not the writer: left alone"
    starting = Taker(ready=False)
    assert await writer.take_cancels(starting) == [], "not cancellable yet: kept"
    taker = Taker()
    assert await writer.take_cancels(taker) == ["far"]
    assert taker.taken == [("far", ASKED)]
    assert await writer.take_cancels(taker) == [] and len(taker.taken) == 1, "taken once"


async def test_a_closed_run_takes_no_request_and_one_left_for_a_run_that_then_ended_is_dropped(
    logs: list[RedisEventLog],
) -> None:
    writer, other, _ = logs
    assert await other.request_cancel("unknown", ASKED) is CancelAsk.ENDED
    await _open(writer, "ending")
    assert await other.request_cancel("ending", ASKED) is CancelAsk.STORED
    await writer.close_run("ending")
    assert await other.request_cancel("ending", ASKED) is CancelAsk.ENDED
    taker = Taker()
    assert await other.take_cancels(taker) == []
    assert taker.taken == [] and not await other._client.hlen(other._key("cancels")), "dropped by any replica"


async def test_a_request_for_a_dead_writer_s_run_is_taken_by_the_replica_that_claims_it_while_it_runs(
    logs: list[RedisEventLog],
) -> None:
    dead, asker, taker_log = logs
    await dead._liveness.renew()  # it renewed its mark once and stopped, as a killed replica does
    await _open(dead, "orphan")
    assert await asker.request_cancel("orphan", ASKED) is CancelAsk.STORED
    taker = Taker()

    async def adopt(run_id: str) -> bool:
        return True

    async with taker_log.running(adopt, taker):
        await until(lambda: taker.taken == [("orphan", ASKED)], "the replica that took the run over to cancel it")


async def test_a_log_of_one_process_stores_no_request() -> None:
    log = MemoryEventLog()
    await log.open_run("here")
    assert await log.request_cancel("here", ASKED) is CancelAsk.UNSHARED
