"""Limits of an agent-tool call: idle timeout, budget, per-request timeout, connect and headers deadlines.

Real time, kept short. Against the scripted agent over HTTP on loopback and in-process.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from contextlib import aclosing, contextmanager
from functools import partial

import anyio
import pytest

from agent_server.http.loopback import free_port
from gateway import AgentToolTimeout, BudgetExceeded, Gateway, PeerConnectionError, PeerLimits
from tests.support.agent_tools import PROBE, agent, call_events, progress_texts, scripted_url, silent_server, types_of  # noqa: F401 (fixtures)

pytestmark = pytest.mark.anyio


async def test_idle_timeout_ends_the_call_promptly_and_the_remote_task_ends_canceled(
    agent: tuple[Gateway, str],
) -> None:
    gateway, uri = agent
    idle = 2.0  # the first line must come within it, also on a starved machine
    gateway.add_agent_tool("sleeper", uri, mode="streaming", streaming={"idle_timeout_secs": idle})
    started = time.monotonic()
    with pytest.raises(AgentToolTimeout) as caught:
        await gateway.call_tool("sleeper", "sleep 30", run_id="r-idle")
    assert idle <= time.monotonic() - started < 20, "the idle timeout ended it, not the agent's 30 s sleep"
    error = caught.value
    assert error.reason == "idle_timeout" and error.partial is not None and error.partial.chunks == 1
    task = await gateway.peer(uri).get(error.partial.task_id or "")
    assert task.status.state.value == "canceled"
    assert PROBE.canceled_at(task.id) is not None, "the agent's own code saw the cancellation"
    events = await call_events(gateway, "r-idle")
    assert types_of(events) == ["invoked", "progress", "terminated"]
    assert events[1].fields["state"] == "working", "the line received before the silence is in the log"
    terminated = events[-1].fields
    assert terminated["reason"] == "idle_timeout"
    assert terminated["cancel_sent"] is True and terminated["cancel_acknowledged"] is True


async def test_a_stream_that_keeps_talking_outlives_the_idle_timeout_and_timeout_ms(agent: tuple[Gateway, str]) -> None:
    gateway, uri = agent
    gateway.add_agent_tool("talker", uri, mode="streaming", timeout_ms=300, streaming={"idle_timeout_secs": 1.5})
    started = time.monotonic()
    result = await gateway.call_tool("talker", "stream 20 0.1 0")  # a line every 0.1 s: 15 within the idle timeout
    assert time.monotonic() - started >= 1.9, "20 lines 0.1 s apart: well past the idle timeout and timeout_ms"
    assert result.state == "completed" and result.text.count("chunk-") == 20


async def test_budget_stops_on_the_chunk_that_crosses_it_and_the_remote_task_ends_canceled(
    agent: tuple[Gateway, str],
) -> None:
    gateway, uri = agent
    gateway.add_agent_tool("spender", uri, mode="streaming", budget={"max_cost_usd": 0.0035})
    with pytest.raises(BudgetExceeded) as caught:
        await gateway.call_tool("spender", "stream 200 0.01 0.001", run_id="r-budget")
    partial = caught.value.partial
    assert partial is not None
    assert partial.text == "chunk-0 chunk-1 chunk-2 ", "the crossing chunk is not passed on"
    assert partial.cost_usd == pytest.approx(0.004) and caught.value.cost_usd == pytest.approx(0.004)
    task = await gateway.peer(uri).get(partial.task_id or "")
    assert task.status.state.value == "canceled"
    assert PROBE.canceled_at(task.id) is not None
    events = await call_events(gateway, "r-budget")
    assert progress_texts(events) == ["chunk-0 ", "chunk-1 ", "chunk-2 "]
    terminated = events[-1]
    assert terminated.type == "agent_tool_terminated" and terminated.fields["reason"] == "budget_exceeded"
    assert terminated.fields["rejected_chunk"]["artifact"]["parts"][0]["text"] == "chunk-3 "
    assert terminated.fields["accumulated_cost_usd"] == pytest.approx(0.004)
    assert terminated.fields["cancel_acknowledged"] is True


async def test_budget_in_sync_and_conversational_modes_is_checked_on_each_reply(agent: tuple[Gateway, str]) -> None:
    gateway, uri = agent
    gateway.add_agent_tool("sync_spender", uri, budget={"max_cost_usd": 0.02})
    gateway.add_agent_tool("chat_spender", uri, mode="conversational", budget={"max_cost_usd": 0.02})
    for name in ("sync_spender", "chat_spender"):
        with pytest.raises(BudgetExceeded) as caught:
            await gateway.call_tool(name, "stream 3 0.001 0.01", run_id=f"r-{name}")
        assert caught.value.partial is not None and caught.value.partial.text == ""
        events = await call_events(gateway, f"r-{name}")
        assert types_of(events) == ["invoked", "terminated"], "the reply over budget is not passed on"
        terminated = events[-1].fields
        assert terminated["reason"] == "budget_exceeded"
        assert terminated["cancel_sent"] is False, "the task had already completed: nothing to cancel"
        assert terminated["rejected_reply"] == "chunk-0 chunk-1 chunk-2 "


async def test_timeout_ms_bounds_a_sync_request_and_cancels_the_task(agent: tuple[Gateway, str]) -> None:
    gateway, uri = agent
    gateway.add_agent_tool("slow", uri, timeout_ms=300)
    started = time.monotonic()
    with pytest.raises(AgentToolTimeout) as caught:
        await gateway.call_tool("slow", "sleep 30", run_id="r-timeout")
    assert 0.3 <= time.monotonic() - started < 10, "timeout_ms ended it, not the agent's 30 s sleep"
    assert caught.value.reason == "timeout"
    task = await gateway.peer(uri).get(caught.value.partial.task_id or "")  # type: ignore[union-attr]
    assert task.status.state.value == "canceled"
    terminated = (await call_events(gateway, "r-timeout"))[-1].fields
    assert (terminated["reason"], terminated["cancel_acknowledged"]) == ("timeout", True)


async def test_a_peer_that_never_sends_headers_fails_at_the_headers_deadline() -> None:
    with silent_server() as url:
        async with Gateway(limits=PeerLimits(headers_timeout_s=0.3, cancel_timeout_s=0.2)) as gateway:
            gateway.add_agent_tool("mute", url, mode="streaming", streaming={"idle_timeout_secs": 30})
            started = time.monotonic()
            with pytest.raises(AgentToolTimeout) as caught:
                await gateway.call_tool("mute", "hello", run_id="r-mute")
            assert 0.3 <= time.monotonic() - started < 10, "the headers deadline ended it, not the 30 s idle timeout"
            assert caught.value.reason == "headers_timeout"
            events = await call_events(gateway, "r-mute")
            assert types_of(events) == ["invoked", "error"] and events[-1].fields["reason"] == "headers_timeout"

            gateway.add_agent_tool("mute_sync", url, timeout_ms=300)
            started = time.monotonic()
            with pytest.raises(AgentToolTimeout) as sync_caught:
                await gateway.call_tool("mute_sync", "hello", run_id="r-mute-sync")
            # timeout_ms, then the cancel's own deadline: the mute peer is not waited for
            assert 0.3 <= time.monotonic() - started < 10
            terminated = (await call_events(gateway, "r-mute-sync"))[-1].fields
            assert sync_caught.value.reason == "timeout"
            assert terminated["cancel_sent"] is True and terminated["cancel_acknowledged"] is False


@contextmanager
def unanswered_syn() -> Iterator[str]:
    """A loopback port whose accept queue is full: the kernel drops new SYNs, so connecting hangs."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = [socket.socket() for _ in range(3)]
        try:
            for filler in fillers:
                filler.setblocking(False)
                filler.connect_ex(("127.0.0.1", port))
            _, connected, _ = select.select([], fillers, [], 10)
            assert connected, "no filler got into the accept queue"
            yield f"http://127.0.0.1:{port}"
        finally:
            for filler in fillers:
                filler.close()


@pytest.mark.parametrize("mode", ["sync", "streaming"])
async def test_a_peer_that_does_not_accept_the_connection_fails_at_the_connect_deadline(mode: str) -> None:
    with unanswered_syn() as url:
        async with Gateway(limits=PeerLimits(connect_timeout_s=0.3)) as gateway:
            gateway.add_agent_tool("unreachable", url, mode=mode, timeout_ms=30_000)
            started = time.monotonic()
            with pytest.raises(AgentToolTimeout) as caught:
                await gateway.call_tool("unreachable", "hello", run_id="r-connect")
            assert 0.3 <= time.monotonic() - started < 10, "the connect deadline ended it, not the 30 s timeout_ms"
            assert caught.value.reason == "connect_timeout"
            events = await call_events(gateway, "r-connect")
            assert types_of(events) == ["invoked", "error"] and events[-1].fields["timeout_s"] == 0.3


async def test_a_refused_connection_fails_at_once_with_a_connection_error() -> None:
    async with Gateway(limits=PeerLimits(connect_timeout_s=30)) as gateway:
        gateway.add_agent_tool("nobody", f"http://127.0.0.1:{free_port()}", mode="streaming")
        started = time.monotonic()
        with pytest.raises(PeerConnectionError, match="cannot reach"):
            await gateway.call_tool("nobody", "hello", run_id="r-refused")
        assert time.monotonic() - started < 10, "failed at the refusal, not at the 30 s connect deadline"
        assert types_of(await call_events(gateway, "r-refused")) == ["invoked", "error"]


async def test_a_call_cancelled_by_its_caller_cancels_the_task_and_is_recorded(agent: tuple[Gateway, str]) -> None:
    gateway, uri = agent
    gateway.add_agent_tool("abandoned", uri, mode="streaming")
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(gateway.call_tool, "abandoned", "stream 200 0.01 0", run_id="r-abandoned"))
            await _chunks_logged(gateway, "r-abandoned", 3)
            tg.cancel_scope.cancel()  # the caller goes away mid-stream
    events = await call_events(gateway, "r-abandoned")
    terminated = events[-1].fields
    assert events[-1].type == "agent_tool_terminated" and terminated["reason"] == "cancelled"
    assert terminated["cancel_acknowledged"] is True and len(progress_texts(events)) >= 3
    task = await gateway.peer(uri).get(terminated["task_id"])
    assert task.status.state.value == "canceled"


async def _chunks_logged(gateway: Gateway, run_id: str, count: int) -> None:
    """Follow the run's events until ``count`` chunks of text are in the log."""
    seen = 0
    async with aclosing(gateway.event_log.follow(run_id)) as events:
        async for event in events:
            seen += event.type == "agent_tool_progress" and "text" in event.fields
            if seen == count:
                return
