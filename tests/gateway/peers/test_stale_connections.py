"""Connections an agent closed while the gateway still pooled them: a request that met one is sent again, once.

The server (tests/support/stale_connections.py) answers one request per connection and drops
the next one sent on it, unanswered: what a keep-alive that ran out while a request was on
its way looks like, every time. Against an agent server whose keep-alive runs out between
calls spaced at it, the same holds whoever closes first.
"""

from __future__ import annotations

import itertools

import anyio
import pytest

from agent_server import ServerLimits
from gateway import Gateway
from gateway.errors import PeerHTTPError
from tests.support.gateway_service import agent_server
from tests.support.stale_connections import stale_server

pytestmark = pytest.mark.anyio

CALLS = 20


async def test_a_request_on_a_connection_the_agent_closed_is_sent_again_on_a_new_one() -> None:
    with stale_server() as server:
        async with Gateway() as gateway:
            gateway.add_agent_tool("stale", server.url)
            for index in range(CALLS):
                result = await gateway.call_tool("stale", f"call {index}")
                assert result.text == f"call {index}"
        # Every call that found the connection left by the one before met the scenario (the resend's own
        # connection is closed after it, so the next call opens a new one).
        assert server.dropped >= CALLS // 2
        assert server.requests == CALLS + 1  # and each was answered once (the card, then the calls)


async def test_an_agent_that_answers_500_is_reported_as_answering_500_not_as_unreachable() -> None:
    with stale_server() as server:
        server.answer_status = 500
        async with Gateway() as gateway:
            gateway.add_agent_tool("stale", server.url)
            for _ in range(3):
                with pytest.raises(PeerHTTPError) as failed:
                    await gateway.call_tool("stale", "hello")
                assert failed.value.status == 500
                assert "cannot reach" not in failed.value.message


async def test_calls_spaced_at_the_agents_keep_alive_all_succeed() -> None:
    keep_alive_s = 0.05
    with agent_server(limits=ServerLimits(keep_alive_timeout_s=keep_alive_s)) as url:
        async with Gateway() as gateway:
            gateway.add_agent_tool("echo", url)
            # Spaced around the agent's keep-alive, so some calls go out just as it closes the idle connection.
            offsets = itertools.cycle((-0.005, -0.001, 0.0, 0.001, 0.005))
            for index, offset in zip(range(200), offsets, strict=False):
                result = await gateway.call_tool("echo", f"echo call-{index}")
                assert result.text == f"call-{index}"
                await anyio.sleep(keep_alive_s + offset)
