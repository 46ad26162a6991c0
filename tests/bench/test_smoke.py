"""The benches' quick runs end to end: no failed call, figures that make sense (streams, the router, the event log).

No timing is asserted: the machine is shared and noisy; only that each figure was measured.
"""

from __future__ import annotations

import math
from pathlib import Path

import anyio
import pytest

from bench import a2a_sse, binding_relay, concurrent_streams, event_log, proxy, router

# Each runs a whole bench (servers started as processes, rounds of calls): minutes on a starved machine.
pytestmark = pytest.mark.timeout(600)


def test_concurrent_streams_quick_run_completes_every_stream() -> None:
    settings = concurrent_streams.parse_settings(["--quick"])
    lines: list[str] = []

    bursts = concurrent_streams.measure(settings, lines.append)

    assert [(b.round, b.path) for b in bursts] == [
        (1, "gateway"),
        (1, "relay"),
        (1, "direct"),
        (2, "direct"),
        (2, "relay"),
        (2, "gateway"),
    ]
    for burst in bursts:
        assert burst.failures == {}, (burst.path, burst.failures)
        assert burst.max_open == settings.streams
        assert len(burst.first_progress_s) == settings.streams
        assert 0 < burst.percentile(0.5) <= burst.percentile(0.99) <= burst.percentile(1.0) < burst.wall_s
        for usage in (burst.gateway, burst.agent):
            assert 0 < usage.rss_before_kib <= usage.rss_peak_kib
            assert usage.fds_peak > 0
        assert (burst.agent if burst.path == "direct" else burst.gateway).fds_peak > settings.streams
    report = "\n".join(lines)
    assert "gw/relay" in report and "failures per reason" in report


def test_router_bench_measures_every_figure_and_routes_its_paraphrases_home() -> None:
    settings = router.Settings(rounds=1, messages=20)
    with router.endpoint_server() as url:
        timings, outcomes = anyio.run(router.measure, settings, url, lambda line: None)
    assert (outcomes.routed_home, outcomes.abstained) == (1.0, 1.0)
    for what, values in timings.seconds.items():
        assert len(values) == (1 if what.startswith("embed") else 20), what
        assert 0 < timings.percentile(what, 0.5) <= timings.percentile(what, 0.99)
    lines: list[str] = []
    router.report(timings, outcomes, lines.append)
    assert "router decision (offline)" in lines[2] and "p99" in lines[2]
    assert lines[-1].startswith("  ratio triage model call (HTTP, loopback) / router decision (offline), p50: ")


def test_event_log_bench_measures_every_figure_at_both_durability_levels(tmp_path: Path) -> None:
    figures = event_log.measure(quick=True, tmp=tmp_path)

    measures = ("raw sqlite3, 1 writer", "append, 1 writer", f"append, {event_log.WRITERS} writers")
    assert set(figures) == {(level, what) for level in ("NORMAL", "FULL") for what in measures}
    assert all(math.isfinite(rate) and rate > 0 for rate in figures.values())
    assert "ratio to raw" in event_log.report(figures)


def test_a2a_sse_bench_reads_every_path_and_reports_both_ratios() -> None:
    lines: list[str] = []
    rates = a2a_sse.run(a2a_sse.Settings(rounds=1, seconds=0.2, streams=4), lines.append)
    assert set(rates) == set(a2a_sse.PATHS) and all(len(r) == 1 and r[0] > 0 for r in rates.values())
    report = a2a_sse.report(rates)
    assert "sse / sdk sse" in report and "sse / switchboard ndjson" in report


def test_binding_relay_bench_relays_every_binding_and_reports_its_ratio_to_ndjson() -> None:
    lines: list[str] = []
    rates = binding_relay.run(binding_relay.Settings(rounds=1, seconds=0.2, streams=4), lines.append)
    assert set(rates) == set(binding_relay.BINDINGS) and all(len(r) == 1 and r[0] > 0 for r in rates.values())
    assert "ratio to ndjson" in binding_relay.report(rates)


def test_proxy_bench_calls_every_binding_directly_and_through_the_proxy() -> None:
    lines: list[str] = []
    figures = proxy.run(proxy.Settings(rounds=1, seconds=0.3, calls=10), lines.append)
    assert set(figures) == set(proxy.BINDINGS)
    for got in figures.values():
        assert len(got.proxy_per_s) == len(got.direct_per_s) == 1 and got.proxy_per_s[0] > 0
        assert all(math.isfinite(value) for value in (*got.added_p50_ms, *got.added_p99_ms))
    assert "added p50 ms" in proxy.report(figures)
