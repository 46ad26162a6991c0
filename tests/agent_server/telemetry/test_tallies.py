"""Tallies scrape as the prometheus-client metrics they stand for: the same families, samples and values."""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from agent_server.telemetry.tallies import Level, Spread, Tallies, Tally

BUCKETS = (0.001, 0.01, 0.5, 1.0, 300.0)


def _without_created(exposition: bytes) -> list[str]:
    return [line for line in exposition.decode().splitlines() if "_created" not in line]


def test_tallies_scrape_like_prometheus_client_metrics() -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    requests = Tally("t_requests", "Requests.", ["route", "status"])
    duration = Spread("t_duration_seconds", "Durations.", ["route"], BUCKETS)
    open_now = Level("t_open", "Open now.", ["side"])
    ours.register(Tallies(requests, duration, open_now))
    counter = Counter("t_requests", "Requests.", ["route", "status"], registry=theirs)
    histogram = Histogram("t_duration_seconds", "Durations.", ["route"], buckets=BUCKETS, registry=theirs)
    gauge = Gauge("t_open", "Open now.", ["side"], registry=theirs)

    for route, status, seconds in [("/a", "200", 0.0005), ("/a", "200", 0.01), ("/b", "404", 2.0), ("/a", "500", 400)]:
        requests.add((route, status))
        counter.labels(route, status).inc()
        duration.observe((route,), seconds)
        histogram.labels(route).observe(seconds)
    for side, change in [("server", 1), ("server", 1), ("client", 1), ("server", -1)]:
        open_now.add((side,), change)
        gauge.labels(side).inc(change)
    requests.add(("/a", "200"), 2.5)
    counter.labels("/a", "200").inc(2.5)

    assert _without_created(generate_latest(ours)) == _without_created(generate_latest(theirs))
    created = [line for line in generate_latest(ours).decode().splitlines() if line.startswith("t_requests_created{")]
    assert len(created) == 3, "a counter's series each say when they were first counted"
    assert ours.get_sample_value("t_duration_seconds_bucket", {"route": "/a", "le": "0.01"}) == 2.0


def test_counts_from_several_threads_are_all_kept() -> None:
    requests = Tally("t_threaded", "Requests.", ["route"])
    registry = CollectorRegistry()
    registry.register(Tallies(requests))

    def count() -> None:
        for number in range(20_000):
            requests.add((f"/{number % 50}",))

    threads = [threading.Thread(target=count) for _ in range(4)]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        generate_latest(registry)  # a scrape meanwhile sees no dict change under it
    for thread in threads:
        thread.join()
    assert sum(requests.counts.values()) == 80_000
