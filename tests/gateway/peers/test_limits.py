"""Limits on what a peer may send, and on the gateway's own pool: each holds, and says which setting it is.

Real servers on loopback, real time kept short.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from agent_server import HostedAgent, TaskContext, TextChunk, create_app
from gateway import AgentToolError, Gateway, PeerLimits, PoolExhausted, RemoteAgent, Runner
from gateway.errors import PeerProtocolError
from tests.support.servers import serve_app
from tests.support.waiting import until

pytestmark = pytest.mark.anyio

CHUNK = "x" * 4096


FLOOD_LIMITS = PeerLimits(max_stream_bytes=64 * 1024, cancel_timeout_s=10)
"""The stream limit under test; a cancel deadline generous enough for a busy machine, so the cancel is acknowledged."""


def _flood() -> HostedAgent:
    """Streams 4 KiB chunks until cancelled (for 10 s at most), a little at a time.

    A millisecond between chunks keeps the server thread from starving the gateway of the GIL,
    which left the cancel unanswered in time and the task ever larger on a loaded machine.
    """

    async def flood(ctx: TaskContext) -> AsyncIterator[Any]:
        for _ in range(10_000):
            yield TextChunk(CHUNK)
            await anyio.sleep(0.001)

    return HostedAgent("flood", flood, description="Never stops talking.")


async def test_a_streamed_answer_over_its_total_limit_ends_the_call_with_a_cancel_and_keeps_what_came() -> None:
    with serve_app(create_app(_flood())) as url:
        async with Gateway(limits=FLOOD_LIMITS) as gateway:
            gateway.add_agent_tool("flood", url, mode="streaming")
            with pytest.raises(PeerProtocolError) as caught:
                await gateway.call_tool("flood", "go", run_id="r-flood")
            task = await gateway.peer(url).get(caught.value.partial.task_id or "")  # type: ignore[union-attr]
            events = await gateway.event_log.read("r-flood")
    error = caught.value
    assert error.reason == "answer_too_large" and "more than 65536 bytes" in error.message
    partial = error.partial
    assert partial is not None and partial.chunks > 5 and len(partial.text) < 64 * 1024
    assert set(partial.text) == {"x"}
    terminated = events[-1]
    assert terminated.type == "agent_tool_terminated"
    assert terminated.fields["reason"] == "answer_too_large" and terminated.fields["max_stream_bytes"] == 65536
    assert terminated.fields["cancel_sent"] is True and terminated.fields["cancel_acknowledged"] is True
    assert task.status.state.value == "canceled"


async def test_a_remote_swarm_member_over_the_stream_limit_fails_the_turn_and_its_task_is_canceled() -> None:
    with serve_app(create_app(_flood())) as url:
        async with Gateway(limits=FLOOD_LIMITS) as gateway:
            runner = Runner(await RemoteAgent.connect(url, gateway), gateway=gateway)
            with pytest.raises(AgentToolError) as caught:
                await runner.run_async("s", "go")
            [run_id] = await runner.event_log.list_runs()
            failed = (await runner.event_log.read(run_id))[-1]
    assert caught.value.reason == "answer_too_large"
    assert failed.type == "run_failed" and "more than 65536 bytes" in failed.fields["error"]


def _holder(release: threading.Event) -> HostedAgent:
    """Says it holds, then holds its stream (and so the gateway's one connection) until ``release``."""

    async def hold(ctx: TaskContext) -> AsyncIterator[Any]:
        yield TextChunk("holding ")
        await until(release.is_set, "the test to release the held stream")
        yield TextChunk("released")

    return HostedAgent("holder", hold, description="Holds its stream open until told.")


async def test_waiting_for_a_pooled_connection_is_the_pools_fault_and_says_which_setting() -> None:
    """The pool wait outlasts the headers deadline, so only the pool can be the one named."""
    release = threading.Event()
    with serve_app(create_app(_holder(release))) as url:
        limits = PeerLimits(max_connections=1, pool_timeout_s=1.0, headers_timeout_s=0.5)
        async with Gateway(limits=limits) as gateway:
            gateway.add_agent_tool("stream", url, mode="streaming")
            gateway.add_agent_tool("quick", url, mode="streaming")
            result: dict[str, Any] = {}

            async def hold_the_only_connection() -> None:
                result["long"] = await gateway.call_tool("stream", "hold")

            try:
                async with anyio.create_task_group() as group:
                    group.start_soon(hold_the_only_connection)
                    await until(lambda: _has_progress(gateway), "the held stream's first chunk")
                    with pytest.raises(PoolExhausted) as caught:
                        await gateway.call_tool("quick", "hi")
                    release.set()
            finally:
                release.set()
    assert caught.value.reason == "pool_exhausted"
    assert "max_connections" in caught.value.message and "all 1 connections" in caught.value.message
    assert result["long"].state == "completed", "the call holding the connection was not disturbed"
    assert result["long"].text == "holding released"


async def _has_progress(gateway: Gateway) -> bool:
    for run_id in await gateway.event_log.list_runs():
        if any("text" in event.fields for event in await gateway.event_log.read(run_id)):
            return True
    return False
