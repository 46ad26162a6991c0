"""Every row of the failure table, against a raw A2A server on loopback that misbehaves on purpose.

Each test checks the documented behaviour and that the events before the failure are in the log.
"""

from __future__ import annotations

import logging
import time
import tracemalloc
from collections.abc import AsyncIterator, Iterator

import pytest
from agent_tool_support import FaultyAgent, call_events, progress_texts, types_of
from servers import serve_app

from gateway import AgentToolTimeout, BudgetExceeded, Gateway, PeerConnectionError, PeerHTTPError, PeerProtocolError

pytestmark = pytest.mark.anyio

LINE_LIMIT = 1 << 20


@pytest.fixture(scope="module")
def faulty() -> Iterator[tuple[FaultyAgent, str]]:
    agent = FaultyAgent()
    with serve_app(agent.app) as url:
        yield agent, url


@pytest.fixture
async def gateway(faulty: tuple[FaultyAgent, str]) -> AsyncIterator[Gateway]:
    async with Gateway(max_line_bytes=LINE_LIMIT) as gateway:
        gateway.add_agent_tool("faulty", faulty[1], mode="streaming", streaming={"idle_timeout_secs": 5})
        gateway.add_agent_tool("faulty_sync", faulty[1])
        yield gateway


async def test_a_malformed_line_is_passed_on_as_raw_and_the_stream_goes_on(gateway: Gateway) -> None:
    result = await gateway.call_tool("faulty", "malformed", run_id="r")
    assert result.state == "completed" and result.text == "partial rest"
    events = await call_events(gateway, "r")
    raw = [e.fields for e in events if e.fields.get("kind") == "raw"]
    assert raw == [raw[0]] and raw[0]["raw"] == '{"seq": 2, "this is not json'
    assert types_of(events)[-1] == "completed"


async def test_bytes_that_are_not_utf8_are_skipped_with_a_warning_and_the_stream_goes_on(
    gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="protocol.ndjson"):
        result = await gateway.call_tool("faulty", "non_utf8", run_id="r")
    assert result.state == "completed" and result.text == "partial abcd"
    assert any("not UTF-8" in record.getMessage() for record in caplog.records)
    assert progress_texts(await call_events(gateway, "r")) == ["partial ", "abcd"]


async def test_a_network_error_mid_stream_fails_the_call_and_keeps_the_partial_result(gateway: Gateway) -> None:
    with pytest.raises(PeerConnectionError, match="broke") as caught:
        await gateway.call_tool("faulty", "break", run_id="r")
    assert caught.value.partial is not None and caught.value.partial.text == "partial "
    events = await call_events(gateway, "r")
    assert types_of(events) == ["invoked", "progress", "progress", "error"]
    assert progress_texts(events) == ["partial "]
    assert events[-1].fields["kind"] == "connection_error" and events[-1].fields["chunks"] == 2


async def test_a_stream_that_ends_without_a_final_line_was_cut_off(gateway: Gateway) -> None:
    with pytest.raises(PeerProtocolError, match="without a final line") as caught:
        await gateway.call_tool("faulty", "cut", run_id="r")
    assert caught.value.reason == "cut_off"
    assert caught.value.partial is not None and caught.value.partial.text == "partial "
    events = await call_events(gateway, "r")
    assert progress_texts(events) == ["partial "] and events[-1].fields["kind"] == "cut_off"


@pytest.mark.parametrize("tool", ["faulty", "faulty_sync"])
async def test_an_http_error_answer_fails_the_call_at_once_with_the_peers_message(gateway: Gateway, tool: str) -> None:
    started = time.monotonic()
    with pytest.raises(PeerHTTPError) as caught:
        await gateway.call_tool(tool, "http_error", run_id="r")
    assert time.monotonic() - started < 0.5
    error = caught.value
    assert (error.status, error.code) == (503, -32603)
    assert "the model provider is down" in str(error)
    events = await call_events(gateway, "r")
    assert types_of(events) == ["invoked", "error"]
    assert events[-1].fields["status"] == 503 and events[-1].fields["body"]["error"]["code"] == -32603

    with pytest.raises(PeerHTTPError, match="HTTP 502: upstream exploded"):
        await gateway.call_tool(tool, "text_error")


async def test_a_50_mb_line_fails_the_call_with_cancel_and_memory_stays_near_the_line_limit(
    gateway: Gateway, faulty: tuple[FaultyAgent, str]
) -> None:
    agent, _ = faulty
    tracemalloc.start()
    try:
        started = time.monotonic()
        with pytest.raises(PeerProtocolError) as caught:
            await gateway.call_tool("faulty", "huge", run_id="r")
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.reason == "line_too_long"
    print(f"traced peak while a 50 MB line streamed in: {peak / 2**20:.2f} MiB (line limit {LINE_LIMIT / 2**20:g} MiB)")
    assert peak < LINE_LIMIT + 4 * (1 << 20), f"peak {peak / 2**20:.1f} MiB"
    assert elapsed < 3
    assert caught.value.partial is not None and caught.value.partial.text == "partial "
    events = await call_events(gateway, "r")
    assert progress_texts(events) == ["partial "]
    terminated = events[-1].fields
    assert events[-1].type == "agent_tool_terminated" and terminated["reason"] == "line_too_long"
    assert terminated["line_bytes"] > LINE_LIMIT and terminated["cancel_acknowledged"] is True
    assert caught.value.partial.task_id in agent.canceled


async def test_a_50_mb_answer_to_a_sync_call_fails_it_without_reading_it_all(gateway: Gateway) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(PeerProtocolError, match="more than") as caught:
            await gateway.call_tool("faulty_sync", "huge_answer", run_id="r")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.reason == "answer_too_large"
    assert peak < 24 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB: the answer was buffered past its 16 MiB limit"
    assert types_of(await call_events(gateway, "r")) == ["invoked", "error"]


@pytest.mark.parametrize("command", ["slow_cancel", "failing_cancel"])
async def test_a_cancel_the_peer_answers_late_or_with_an_error_is_not_acknowledged_and_bounded(
    faulty: tuple[FaultyAgent, str], command: str
) -> None:
    agent, url = faulty
    async with Gateway(cancel_timeout_s=0.3) as gateway:
        gateway.add_agent_tool("silent", url, mode="streaming", streaming={"idle_timeout_secs": 0.2})
        started = time.monotonic()
        with pytest.raises(AgentToolTimeout) as caught:
            await gateway.call_tool("silent", command, run_id="r")
        assert time.monotonic() - started < 0.2 + 0.3 + 0.3, "idle timeout, then at most the cancel's own deadline"
        assert caught.value.partial is not None and caught.value.partial.text == "partial "
        assert caught.value.partial.task_id in agent.canceled
        events = await call_events(gateway, "r")
        assert progress_texts(events) == ["partial "]
        terminated = events[-1].fields
        assert (terminated["reason"], terminated["cancel_sent"], terminated["cancel_acknowledged"]) == (
            "idle_timeout",
            True,
            False,
        )


async def test_a_cost_billed_on_the_final_line_fails_the_call_without_cancelling_an_ended_task(
    gateway: Gateway, faulty: tuple[FaultyAgent, str]
) -> None:
    agent, url = faulty
    gateway.add_agent_tool("billed", url, mode="streaming", budget={"max_cost_usd": 0.5})
    with pytest.raises(BudgetExceeded) as caught:
        await gateway.call_tool("billed", "final_cost", run_id="r")
    partial = caught.value.partial
    assert partial is not None and partial.text == "partial " and partial.cost_usd == pytest.approx(1.001)
    assert partial.state == "completed", "the rejected final line still tells how the task ended"
    assert partial.task_id not in agent.canceled
    events = await call_events(gateway, "r")
    assert progress_texts(events) == ["partial "]
    terminated = events[-1].fields
    assert terminated["reason"] == "budget_exceeded" and terminated["rejected_chunk"]["final"] is True
    assert terminated["cancel_sent"] is False and terminated["cancel_acknowledged"] is False
