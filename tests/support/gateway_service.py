"""Helpers for the gateway service tests: agents on loopback, a gateway app on loopback, NDJSON reading."""

from __future__ import annotations

import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import httpx
import orjson
import pytest

from agent_server import HostedAgent, ServerLimits, TaskContext, TextChunk, create_app
from agent_server.http.speedups import DEFAULT_HTTP, HttpParser
from agent_server.testing import scripted_agent
from gateway import Agent, MemoryEventLog, MemorySessionStore
from gateway.service import GatewayService, RemoteSpec, create_gateway_app
from tests.support.servers import serve_app
from tests.support.waiting import PROCESS_S


def billing_agent(pause_s: float = 0.0) -> HostedAgent:
    """A remote specialist that answers in two chunks."""

    async def billing(ctx: TaskContext) -> AsyncIterator[Any]:
        yield TextChunk("Billing here: ", cost_usd=0.001)
        await anyio.sleep(pause_s)
        yield TextChunk("your refund is on its way.", cost_usd=0.001)

    return HostedAgent("billing", billing, description="Billing: refunds, double charges, invoices and payments.")


@contextmanager
def agent_server(
    agent: HostedAgent | None = None, limits: ServerLimits | None = None, http: HttpParser = DEFAULT_HTTP
) -> Iterator[str]:
    """An agent server on loopback; by default the scripted agent (its messages are commands)."""
    with serve_app(create_app(agent or scripted_agent("scripted")), limits=limits, http=http) as url:
        yield url


def triage_service(*, remotes: tuple[RemoteSpec, ...] = (), **options: Any) -> GatewayService:
    """A local offline triage agent in front, memory stores."""
    triage = Agent("triage", "Route customers to the right specialist.")
    return GatewayService(
        triage, remotes=remotes, session_store=MemorySessionStore(), event_log=MemoryEventLog(), **options
    )


def remote_first_service(agent_url: str, name: str = "slow", startup_wait_s: float = 0.0) -> GatewayService:
    """The remote agent at ``agent_url`` answers first (the scripted one: ``stream N INTERVAL`` makes a slow run)."""
    return GatewayService(
        starting_agent_name=name,
        remotes=[RemoteSpec(agent_url, name)],
        session_store=MemorySessionStore(),
        event_log=MemoryEventLog(),
        startup_wait_s=startup_wait_s,
    )


@contextmanager
def gateway_server(service: GatewayService) -> Iterator[str]:
    with serve_app(create_gateway_app(service)) as url:
        yield url


def wait_for_health(url: str, process: subprocess.Popen[str]) -> dict[str, Any]:
    """``GET /health`` of a gateway started as a process, once it answers; fails the test if the process exits."""
    deadline = time.monotonic() + PROCESS_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the gateway exited with {process.returncode}: {process.communicate()[1]}")
        try:
            return httpx.get(f"{url}/health", timeout=0.5).json()
        except httpx.TransportError:
            time.sleep(0.05)
    pytest.fail("the gateway did not come up")


def client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=10)


def lines_of(response: httpx.Response) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in response.text.splitlines() if line]


def error_of(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    return body["error"]
