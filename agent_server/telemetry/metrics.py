"""Prometheus metrics of a service: one registry per process, served at ``GET /metrics``.

The agent server's own metrics are here (HTTP requests, open streams, tasks by state);
the gateway adds its own to the same registry (gateway/telemetry/metrics.py), so a
gateway's ``/metrics`` shows both (it hosts its own agent binding). Every name, label and
meaning is in docs/observability.md. Recording is on unless ``SWITCHBOARD_METRICS=off``;
then every ``record_*`` call returns at once and ``/metrics`` answers 404.

prometheus-client is imported when this module is, which the servers do at start, not at
``switchboard --help``.
"""

from __future__ import annotations

import os
from functools import cache
from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import Response

from protocol import ErrorCode, ProtocolError

ENABLED = os.environ.get("SWITCHBOARD_METRICS", "on").strip().lower() not in ("off", "0", "false", "no")
"""Whether this process records metrics (``SWITCHBOARD_METRICS=off`` turns them off)."""

REGISTRY = CollectorRegistry(auto_describe=True)

LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)

HTTP_REQUESTS = Counter(
    "switchboard_http_requests",
    "HTTP requests answered, by route template, method and status.",
    ["route", "method", "status"],
    registry=REGISTRY,
)
HTTP_DURATION = Histogram(
    "switchboard_http_request_duration_seconds",
    "Time from a request's arrival to the end of its response (a stream: its last line).",
    ["route", "method"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
OPEN_STREAMS = Gauge(
    "switchboard_open_streams",
    "NDJSON streams open now: served to callers (side=server) or read from agents (side=client).",
    ["side"],
    registry=REGISTRY,
)
TASKS = Counter(
    "switchboard_agent_server_tasks",
    "Tasks of the hosted agent that reached a state (working, input-required, completed, canceled, failed).",
    ["agent", "state"],
    registry=REGISTRY,
)
TASKS_RUNNING = Gauge(
    "switchboard_agent_server_tasks_running",
    "Tasks whose handler is running now.",
    ["agent"],
    registry=REGISTRY,
)
PUSH_NOTIFICATIONS = Counter(
    "switchboard_push_notifications",
    "Push notifications by what became of them: delivered, retried (a try failed, another follows), failed "
    "(every try failed or the webhook refused it), dropped (the queue was full or the server stopped), "
    "refused (the webhook host is not allowed).",
    ["outcome"],
    registry=REGISTRY,
)


_Metric = TypeVar("_Metric", Counter, Gauge, Histogram)


@cache
def labelled(metric: _Metric, *values: str) -> _Metric:
    """``metric.labels(*values)``, looked up once: ``labels`` takes a lock and builds its key at every call.

    The cache holds no more than the registry does, which keeps every child it made.
    """
    return metric.labels(*values)


def record_request(route: str, method: str, status: int, seconds: float) -> None:
    if ENABLED:
        labelled(HTTP_REQUESTS, route, method, str(status)).inc()
        labelled(HTTP_DURATION, route, method).observe(seconds)


def record_task_state(agent: str, state: str) -> None:
    if ENABLED:
        labelled(TASKS, agent, state).inc()


def record_push(outcome: str, count: int = 1) -> None:
    if ENABLED:
        labelled(PUSH_NOTIFICATIONS, outcome).inc(count)


def stream_opened(side: str) -> None:
    if ENABLED:
        labelled(OPEN_STREAMS, side).inc()


def stream_closed(side: str) -> None:
    if ENABLED:
        labelled(OPEN_STREAMS, side).dec()


async def metrics_endpoint(request: Request) -> Response:
    """The registry in the Prometheus text format (404 when metrics are off)."""
    if not ENABLED:
        raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, "metrics are off (SWITCHBOARD_METRICS=off)", http_status=404)
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
