"""The misbehaving A2A server the call tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.agent_tools import FaultyAgent
from tests.support.servers import serve_app


@pytest.fixture(scope="module")
def faulty() -> Iterator[tuple[FaultyAgent, str]]:
    """A FaultyAgent on loopback and its URL, one per test module (it records the cancels it gets)."""
    agent = FaultyAgent()
    with serve_app(agent.app) as url:
        yield agent, url
