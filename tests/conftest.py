"""Shared fixtures: a Redis, the scripted agent and a gateway on loopback. Async tests use anyio's plugin on asyncio."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from hypothesis import settings

from tests.support.gateway_service import agent_server, gateway_server, triage_service
from tests.support.redis import LocalRedis

# Property tests check behaviour, not speed: no per-example deadline on a busy 2-core machine.
settings.register_profile("switchboard", deadline=None)
settings.load_profile("switchboard")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedis]:
    """One Redis-compatible server per test process (each xdist worker has its own), started on first use."""
    with LocalRedis(tmp_path_factory.mktemp("redis"), fsync="everysec") as server:
        yield server


@pytest.fixture
def redis_url(redis_server: LocalRedis) -> str:
    """A store spec on that server with a key prefix of this test's own, so no test sees another's keys."""
    return f"{redis_server.url}/0?prefix=t{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def scripted_url() -> Iterator[str]:
    """The scripted agent (its messages are commands, agent_server.testing) on loopback, one per test module."""
    with agent_server() as url:
        yield url


@pytest.fixture
def triage_gateway_url() -> Iterator[str]:
    """A gateway on loopback with the offline triage agent in front and memory stores, fresh for each test."""
    with gateway_server(triage_service()) as url:
        yield url
