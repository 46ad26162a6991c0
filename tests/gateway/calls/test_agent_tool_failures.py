"""Every row of the failure table, against a raw A2A server on loopback that misbehaves on purpose.

Each test checks the documented behaviour and that the events before the failure are in the log.
"""

from __future__ import annotations

import gc
import logging
import time
import tracemalloc
from collections.abc import AsyncIterator

import orjson
import pytest

from gateway import (
    AgentToolTimeout,
    BudgetExceeded,
    Gateway,
    PeerConnectionError,
    PeerHTTPError,
    PeerLimits,
    PeerProtocolError,
)
from gateway.event_log import MemoryEventLog
from gateway.recording.events import Event
from tests.support.agent_tools import (
    FaultyAgent,
    call_events,
    finalized_async_generators,
    progress_texts,
    silent_server,
    types_of,
)

pytestmark = pytest.mark.anyio

LINE_LIMIT = 1 << 20


@pytest.fixture
async def gateway(faulty: tuple[FaultyAgent, str]) -> AsyncIterator[Gateway]:
    async with Gateway(limits=PeerLimits(max_line_bytes=LINE_LIMIT)) as gateway:
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
    with caplog.at_level(logging.WARNING, logger="gateway.calls.lines"):
        result = await gateway.call_tool("faulty", "non_utf8", run_id="r")
    assert result.state == "completed" and result.text == "partial abcd"
    assert any("2 bytes that are not UTF-8" in record.getMessage() for record in caplog.records)
    events = await call_events(gateway, "r")
    assert progress_texts(events) == ["partial ", "abcd"]
    assert [e.fields.get("skipped_bytes") for e in events if "text" in e.fields] == [None, 2]
    assert events[-1].type == "agent_tool_completed" and events[-1].fields["skipped_bytes"] == 2
    assert events[-1].fields["text_in_chunks"] is True, "the streamed text is stored once, in the chunks"


async def test_a_network_error_mid_stream_fails_the_call_and_keeps_the_partial_result(gateway: Gateway) -> None:
    with pytest.raises(PeerConnectionError, match="broke") as caught:
        await gateway.call_tool("faulty", "break", run_id="r")
    assert caught.value.partial is not None and caught.value.partial.text == "partial "
    events = await call_events(gateway, "r")
    assert types_of(events) == ["invoked", "progress", "progress", "error"]
    assert progress_texts(events) == ["partial "]
    assert events[-1].fields["reason"] == "connection_error" and events[-1].fields["chunks"] == 2


async def test_a_stream_that_ends_without_a_final_line_was_cut_off(gateway: Gateway) -> None:
    with pytest.raises(PeerProtocolError, match="without a final line") as caught:
        await gateway.call_tool("faulty", "cut", run_id="r")
    assert caught.value.reason == "cut_off"
    assert caught.value.partial is not None and caught.value.partial.text == "partial "
    events = await call_events(gateway, "r")
    assert progress_texts(events) == ["partial "] and events[-1].fields["reason"] == "cut_off"


@pytest.mark.parametrize("tool", ["faulty", "faulty_sync"])
async def test_an_http_error_answer_fails_the_call_at_once_with_the_peers_message(gateway: Gateway, tool: str) -> None:
    started = time.monotonic()
    with pytest.raises(PeerHTTPError) as caught:
        await gateway.call_tool(tool, "http_error", run_id="r")
    assert time.monotonic() - started < 4, "at once: before any deadline (the nearest, the idle timeout, is 5 s)"
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
        with pytest.raises(PeerProtocolError) as caught:
            await gateway.call_tool("faulty", "huge", run_id="r")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.reason == "line_too_long"
    print(f"traced peak while a 50 MB line streamed in: {peak / 2**20:.2f} MiB (line limit {LINE_LIMIT / 2**20:g} MiB)")
    assert peak < LINE_LIMIT + 4 * (1 << 20), f"peak {peak / 2**20:.1f} MiB"
    assert caught.value.partial is not None and caught.value.partial.text == "partial "
    events = await call_events(gateway, "r")
    assert progress_texts(events) == ["partial "]
    terminated = events[-1].fields
    assert events[-1].type == "agent_tool_terminated" and terminated["reason"] == "line_too_long"
    assert LINE_LIMIT < terminated["line_bytes"] < 2 * LINE_LIMIT, (
        "cut as the line crossed the limit, not read to its end"
    )
    assert terminated["cancel_acknowledged"] is True
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
    async with Gateway(limits=PeerLimits(cancel_timeout_s=0.3)) as gateway:
        gateway.add_agent_tool("silent", url, mode="streaming", streaming={"idle_timeout_secs": 0.2})
        started = time.monotonic()
        with pytest.raises(AgentToolTimeout) as caught:
            await gateway.call_tool("silent", command, run_id="r")
        assert time.monotonic() - started < 10, (
            "idle timeout, then at most the cancel's own deadline, not the 30 s answer"
        )
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


async def test_a_legitimate_raw_object_is_passed_on_as_that_object_not_as_a_malformed_line(gateway: Gateway) -> None:
    result = await gateway.call_tool("faulty", "legit_raw", run_id="r")
    assert result.state == "completed"
    raw = [e.fields["raw"] for e in await call_events(gateway, "r") if e.fields.get("kind") == "raw"]
    assert raw == [{"raw": "legit"}], "an object that is no event, not the text of a malformed line"


async def test_a_stream_line_with_a_cost_that_is_no_number_is_not_an_event(gateway: Gateway) -> None:
    result = await gateway.call_tool("faulty", "text_cost", run_id="r")
    assert result.text == "partial " and result.cost_usd == pytest.approx(0.001)
    raw = [e.fields["raw"] for e in await call_events(gateway, "r") if e.fields.get("kind") == "raw"]
    assert raw[0]["cost_usd"] == "free", "validated by the protocol model: passed on as raw"


async def test_a_negative_cost_on_a_stream_line_is_a_bad_answer(gateway: Gateway) -> None:
    with pytest.raises(PeerProtocolError, match="cost_usd") as caught:
        await gateway.call_tool("faulty", "negative_cost", run_id="r")
    assert caught.value.reason == "bad_answer" and caught.value.partial is not None
    assert caught.value.partial.text == "partial " and caught.value.partial.cost_usd == pytest.approx(0.001)
    assert types_of(await call_events(gateway, "r"))[-1] == "error"


@pytest.mark.parametrize(
    ("metadata", "problem"),
    [
        ({"cost_usd": "free"}, "cost_usd"),
        ({"cost_usd": [1]}, "cost_usd"),
        ({"cost_usd": -0.5}, "cost_usd"),
        ({"cost_usd": True}, "cost_usd"),
        ({"handoff": {"target": ""}}, "metadata.handoff"),
        ({"handoff": "billing"}, "metadata.handoff"),
    ],
)
async def test_metadata_of_the_wrong_shape_is_a_bad_answer_recorded_and_shown_to_the_model(
    gateway: Gateway, metadata: dict[str, object], problem: str
) -> None:
    command = "meta:" + orjson.dumps(metadata).decode()
    with pytest.raises(PeerProtocolError, match=problem) as caught:
        await gateway.call_tool("faulty_sync", command, run_id="r")
    assert caught.value.reason == "bad_answer"
    events = await call_events(gateway, "r")
    assert types_of(events) == ["invoked", "error"] and events[-1].fields["reason"] == "bad_answer"
    note = await gateway.tool_function("faulty_sync").invoke({"input": command})
    assert note.startswith("[agent tool faulty_sync failed (bad_answer):")


async def test_good_metadata_is_parsed_once_and_taken(gateway: Gateway) -> None:
    command = "meta:" + orjson.dumps({"cost_usd": 0.25, "handoff": {"target": "billing", "reason": "r"}}).decode()
    result = await gateway.call_tool("faulty_sync", command)
    assert result.cost_usd == 0.25 and result.handoff is not None and result.handoff.target == "billing"


async def test_a_request_the_agent_never_reads_names_the_deadline_that_passed() -> None:
    """The agent accepts and never reads: a 16 MiB request fills the socket buffers and cannot be written."""
    with silent_server(receive_buffer=4096) as url:
        async with Gateway(limits=PeerLimits(headers_timeout_s=0.7)) as gateway:
            gateway.add_agent_tool("slow_upload", url, timeout_ms=5000)
            with pytest.raises(AgentToolTimeout) as caught:
                await gateway.call_tool("slow_upload", "x" * (16 << 20), run_id="r")
    assert caught.value.reason == "headers_timeout" and caught.value.seconds == 0.7
    assert "could not send the request" in caught.value.message and "within 0.7 s" in caught.value.message


class _FailingLog(MemoryEventLog):
    """A memory log whose append fails once, on the ``fail_at``-th progress event."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.fail_at = fail_at
        self.progress = 0

    async def append(self, event: Event) -> Event:
        if event.type == "agent_tool_progress":
            self.progress += 1
            if self.progress == self.fail_at:
                raise OSError("disk full")
        return await super().append(event)


async def test_a_chunk_whose_progress_event_was_not_appended_is_not_counted_in_the_result(
    faulty: tuple[FaultyAgent, str],
) -> None:
    log = _FailingLog(fail_at=2)  # the second line, the artifact costing $0.001
    async with Gateway(log) as gateway:
        gateway.add_agent_tool("faulty", faulty[1], mode="streaming")
        with pytest.raises(OSError, match="disk full"):
            await gateway.call_tool("faulty", "malformed", run_id="r")
        events = await gateway.event_log.read("r")
    assert types_of(events) == ["invoked", "progress", "error"]
    error = events[-1].fields
    assert error["reason"] == "internal_error"
    assert error["chunks"] == 1 and error["accumulated_cost_usd"] == 0.0, "the result holds only what the log holds"


async def test_the_http_stream_closes_its_inner_generators(gateway: Gateway) -> None:
    with finalized_async_generators() as finalized:
        await gateway.call_tool("faulty", "malformed")
        with pytest.raises(PeerProtocolError):
            await gateway.call_tool("faulty", "huge")
        gc.collect()
    assert not [name for name in finalized if name in {"aiter_raw", "aiter_ndjson", "_lines"}], finalized
