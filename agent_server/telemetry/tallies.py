"""Counters, gauges and histograms kept as plain numbers, turned into Prometheus metrics only when scraped.

prometheus-client's metrics look their child up by label values, then walk their objects
and take a lock per value at every ``inc`` and ``observe``; the metrics counted per request
(every request, every task's states, every open stream) would pay that on every request for
a value read once per scrape. A ``Tallies`` keeps each one as numbers in dicts keyed by its
label values, and is a collector of the process's registry: at a scrape it hands
prometheus-client the same families, samples and ``_created`` times its own metrics would
have. Each tally takes one lock per change and copies its numbers under it at a scrape: a
process may serve from several threads (servers in threads, as tests run them), and an
increment must not be lost nor a scrape see a dict change under it.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import cast

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

_go_float = cast(Callable[[float], str], floatToGoString)  # untyped: how prometheus-client writes an ``le``

Labels = tuple[str, ...]


class Tally:
    """A counter: ``add`` to the count of some label values."""

    kind = "counter"

    def __init__(self, name: str, documentation: str, labels: Sequence[str]) -> None:
        self.name, self.documentation, self.labels = name, documentation, tuple(labels)
        self.counts: dict[Labels, float] = {}
        self.created: dict[Labels, float] = {}
        self._lock = threading.Lock()

    def add(self, values: Labels, amount: float = 1.0) -> None:
        with self._lock:
            count = self.counts.get(values)
            if count is None:
                self.created[values] = time.time()
                count = 0.0
            self.counts[values] = count + amount

    def metric(self) -> Metric:
        with self._lock:
            series = [(values, count, self.created[values]) for values, count in self.counts.items()]
        metric = Metric(self.name, self.documentation, self.kind)
        for values, count, created in series:
            labels = dict(zip(self.labels, values, strict=True))
            metric.add_sample(self.name + "_total", labels, count)
            metric.add_sample(self.name + "_created", labels, created)
        return metric


class Level:
    """A gauge: ``add`` (or subtract) to the level of some label values."""

    kind = "gauge"

    def __init__(self, name: str, documentation: str, labels: Sequence[str]) -> None:
        self.name, self.documentation, self.labels = name, documentation, tuple(labels)
        self.levels: dict[Labels, float] = {}
        self._lock = threading.Lock()

    def add(self, values: Labels, amount: float) -> None:
        with self._lock:
            self.levels[values] = self.levels.get(values, 0.0) + amount

    def metric(self) -> Metric:
        with self._lock:
            series = list(self.levels.items())
        metric = Metric(self.name, self.documentation, self.kind)
        for values, level in series:
            metric.add_sample(self.name, dict(zip(self.labels, values, strict=True)), level)
        return metric


class Spread:
    """A histogram: ``observe`` a value for some label values; the buckets are cumulated at the scrape."""

    kind = "histogram"

    def __init__(self, name: str, documentation: str, labels: Sequence[str], buckets: Sequence[float]) -> None:
        self.name, self.documentation, self.labels = name, documentation, tuple(labels)
        self.bounds = tuple(float(bound) for bound in buckets)
        self.les = tuple(_go_float(bound) for bound in (*self.bounds, float("inf")))
        self.buckets: dict[Labels, list[int]] = {}  # one count per bound, then one for +Inf
        self.sums: dict[Labels, float] = {}
        self.created: dict[Labels, float] = {}
        self._lock = threading.Lock()

    def observe(self, values: Labels, amount: float) -> None:
        bucket = bisect.bisect_left(self.bounds, amount)
        with self._lock:
            counts = self.buckets.get(values)
            if counts is None:
                counts = self.buckets[values] = [0] * (len(self.bounds) + 1)
                self.sums[values] = 0.0
                self.created[values] = time.time()
            counts[bucket] += 1
            self.sums[values] += amount

    def metric(self) -> Metric:
        with self._lock:
            series = [
                (values, list(counts), self.sums[values], self.created[values])
                for values, counts in self.buckets.items()
            ]
        metric = Metric(self.name, self.documentation, self.kind)
        for values, counts, total, created in series:
            labels = dict(zip(self.labels, values, strict=True))
            cumulated = 0
            for le, count in zip(self.les, counts, strict=True):
                cumulated += count
                metric.add_sample(self.name + "_bucket", {**labels, "le": le}, float(cumulated))
            metric.add_sample(self.name + "_count", labels, float(cumulated))
            metric.add_sample(self.name + "_sum", labels, total)
            metric.add_sample(self.name + "_created", labels, created)
        return metric


class Tallies(Collector):
    """The tallies a registry scrapes, in the order they were made."""

    def __init__(self, *tallies: Tally | Level | Spread) -> None:
        self.tallies = tallies

    def collect(self) -> Iterator[Metric]:
        for tally in self.tallies:
            yield tally.metric()

    def describe(self) -> Iterator[Metric]:
        """The families without samples: the registry checks their names against the others' at registration."""
        for tally in self.tallies:
            yield Metric(tally.name, tally.documentation, tally.kind)
