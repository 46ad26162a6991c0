"""Retention of the event log, memory, SQLite and Redis alike: closed runs past their age or count are pruned by
the log itself while it runs; a run still open never is."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from gateway.config.load import load_config
from gateway.defaults import EVENTS_RETENTION_DAYS
from gateway.event_log import EventLog, Retention
from gateway.recording.events import Event, EventType, now_ms
from gateway.service import build_service
from tests.support.event_logs import KINDS, event_log_of
from tests.support.waiting import until

pytestmark = pytest.mark.anyio

LogFactory = Callable[[Retention], EventLog]


@pytest.fixture(params=KINDS)
async def make_log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[LogFactory]:
    """Opens logs of one kind (closed at the end) on one store, each with the retention given; a memory log is
    one store, so it is the same log each time, given the new retention."""
    made: list[EventLog] = []

    def make(retention: Retention) -> EventLog:
        if made and request.param == "memory":
            made[0].retention = retention
            return made[0]
        log = event_log_of(request.param, tmp_path, lambda: str(request.getfixturevalue("redis_url")), retention)
        made.append(log)
        return log

    yield make
    for log in made:
        await log.aclose()


async def _runs(log: EventLog, count: int, *, closed: bool = True, prefix: str = "run") -> list[str]:
    run_ids = [f"{prefix}-{n}" for n in range(count)]
    for run_id in run_ids:
        await log.open_run(run_id, owner="ada")
        await log.append(Event.create(EventType.TEXT_DELTA, run_id, agent="a", text="hello"))
        if closed:
            await log.close_run(run_id)
    return run_ids


async def test_past_max_runs_the_oldest_closed_runs_are_pruned_and_open_ones_kept(make_log: LogFactory) -> None:
    log = make_log(Retention(max_runs=3))
    open_ids = await _runs(log, 2, closed=False, prefix="open")
    closed_ids = await _runs(log, 5)
    assert await log.prune() == closed_ids[:2]
    assert await log.list_runs() == list(reversed([*open_ids, *closed_ids]))[:3] + open_ids[::-1]
    assert await log.read(closed_ids[0]) == [] and not await log.has_run(closed_ids[0])
    assert await log.list_runs(owner="ada") == await log.list_runs()
    assert [e.fields["text"] for e in await log.read(closed_ids[2])] == ["hello"]
    assert await log.prune() == []


async def test_runs_closed_longer_ago_than_the_age_bound_are_pruned(
    make_log: LogFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = make_log(Retention(max_age_s=3600))
    old = await _runs(log, 3, prefix="old")
    still_open = await _runs(log, 1, closed=False, prefix="open")
    assert await log.prune() == [], "nothing was closed an hour ago"
    cutoff = now_ms() + 1
    await until(lambda: now_ms() > cutoff, "the clock to pass the cutoff")
    recent = await _runs(log, 2, prefix="recent")
    monkeypatch.setattr(Retention, "closed_before_ms", lambda self, now: cutoff)  # as if an hour had passed since
    assert await log.prune() == old
    assert await log.list_runs() == [*recent[::-1], *still_open]


async def test_the_log_prunes_itself_in_batches_while_it_runs(make_log: LogFactory) -> None:
    log = make_log(Retention(max_runs=2, every_s=3600, batch=2))
    run_ids = await _runs(log, 7)
    async with log.running():
        await until(lambda: _listed(log, run_ids[-2:][::-1]), "the log to prune all but the newest two runs")


async def _listed(log: EventLog, expected: list[str]) -> bool:
    return await log.list_runs() == expected


def test_retention_from_the_configuration_and_its_refusals() -> None:
    assert Retention.configured(0, 0).keeps_all
    assert Retention.configured(30, 0) == Retention(max_age_s=30 * 86_400.0)
    assert Retention.configured(0, 100) == Retention(max_runs=100)
    with pytest.raises(ValueError, match="max_runs must be at least 1"):
        Retention(max_runs=0)
    with pytest.raises(ValueError, match="max_age_s must be positive"):
        Retention(max_age_s=-1)


async def test_the_configured_retention_reaches_the_gateways_log(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(f'[gateway]\ndata_dir = "{tmp_path}"\n\n[stores]\nevents_max_runs = 5\n', encoding="utf-8")
    service = build_service(load_config(config, environ={}))
    async with service:
        assert service.event_log.retention == Retention(max_age_s=EVENTS_RETENTION_DAYS * 86_400.0, max_runs=5)
    config.write_text("[stores]\nevents_retention_days = 0\n", encoding="utf-8")
    assert Retention.configured(load_config(config, environ={}).stores.events_retention_days, 0).keeps_all
