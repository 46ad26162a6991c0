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

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import Response

from agent_server.telemetry.tallies import Level, Spread, Tallies, Tally
from protocol import ErrorCode, ProtocolError

ENABLED = os.environ.get("SWITCHBOARD_METRICS", "on").strip().lower() not in ("off", "0", "false", "no")
"""Whether this process records metrics (``SWITCHBOARD_METRICS=off`` turns them off)."""

REGISTRY = CollectorRegistry(auto_describe=True)

LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)

HTTP_REQUESTS = Tally(
    "switchboard_http_requests",
    "HTTP requests answered, by route template, method and status.",
    ["route", "method", "status"],
)
HTTP_DURATION = Spread(
    "switchboard_http_request_duration_seconds",
    "Time from a request's arrival to the end of its response (a stream: its last line).",
    ["route", "method"],
    LATENCY_BUCKETS,
)
OPEN_STREAMS = Level(
    "switchboard_open_streams",
    "NDJSON streams open now: served to callers (side=server) or read from agents (side=client).",
    ["side"],
)
TASKS = Tally(
    "switchboard_agent_server_tasks",
    "Tasks of the hosted agent that reached a state (working, input-required, completed, canceled, failed).",
    ["agent", "state"],
)
TASKS_RUNNING = Level(
    "switchboard_agent_server_tasks_running",
    "Tasks whose handler is running now.",
    ["agent"],
)
PUSH_NOTIFICATIONS = Tally(
    "switchboard_push_notifications",
    "Push notifications by what became of them: delivered, retried (a try failed, another follows), failed "
    "(every try failed or the webhook refused it), dropped (the queue was full or the server stopped), "
    "refused (the webhook host is not allowed).",
    ["outcome"],
)
REGISTRY.register(Tallies(HTTP_REQUESTS, HTTP_DURATION, OPEN_STREAMS, TASKS, TASKS_RUNNING, PUSH_NOTIFICATIONS))
"""Counted at every request, task, stream and push: plain numbers until a scrape (telemetry/tallies.py)."""


def record_request(route: str, method: str, status: int, seconds: float) -> None:
    if ENABLED:
        HTTP_REQUESTS.add((route, method, str(status)))
        HTTP_DURATION.observe((route, method), seconds)


def record_task_state(agent: str, state: str) -> None:
    if ENABLED:
        TASKS.add((agent, state))


def task_running(agent: str, change: int) -> None:
    """One more (1) or one fewer (-1) handler of ``agent`` runs now."""
    if ENABLED:
        TASKS_RUNNING.add((agent,), change)


def record_push(outcome: str, count: int = 1) -> None:
    if ENABLED:
        PUSH_NOTIFICATIONS.add((outcome,), count)


def stream_opened(side: str) -> None:
    if ENABLED:
        OPEN_STREAMS.add((side,), 1)


def stream_closed(side: str) -> None:
    if ENABLED:
        OPEN_STREAMS.add((side,), -1)


async def metrics_endpoint(request: Request) -> Response:
    """The registry in the Prometheus text format (404 when metrics are off)."""
    if not ENABLED:
        raise ProtocolError(ErrorCode.METHOD_NOT_FOUND, "metrics are off (SWITCHBOARD_METRICS=off)", http_status=404)
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
