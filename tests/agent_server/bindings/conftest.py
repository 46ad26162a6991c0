"""Fixtures for the tests that run the real a2a-sdk client against both faces: an agent server and the gateway.

A module that uses them defines ``faces`` (tests/support/a2a_clients.py ``agent_and_gateway``);
``base_url`` is each face in turn, ``sdk_client`` a streaming client of each version there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from a2a.client import Client

from tests.support.a2a_clients import sdk_client as make_sdk_client


@pytest.fixture(params=["server", "gateway"])
def base_url(request: pytest.FixtureRequest, faces: dict[str, str]) -> str:
    return faces[request.param]


@pytest.fixture(params=["1.0", "0.3"])
async def sdk_client(request: pytest.FixtureRequest, base_url: str) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(timeout=30) as http:
        yield await make_sdk_client(http, base_url, request.param, streaming=True)
