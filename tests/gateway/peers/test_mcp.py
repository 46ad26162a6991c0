"""MCP tools as agents: the SDK's MCPServer over stdio (a spawned command) and over streamable HTTP.

Modes, limits and events behave as with A2A agents; progress notifications become progress
events; cancel is MCP cancellation and reaches the tool's code.
"""

from __future__ import annotations

import base64
import gc
import os
import shlex
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import mcp.client.stdio
import pytest

from gateway import AgentTaskFailed, AgentToolTimeout, Gateway, PeerConnectionError, PeerLimits, PeerProtocolError
from gateway.peers.mcp import STREAM_BUFFER
from protocol import DataPart, FilePart, Message, StatusEvent, TaskSendParams
from tests.support.agent_tools import call_events, finalized_async_generators, progress_texts, types_of
from tests.support.mcp_servers import tools as mcp_tools
from tests.support.mcp_servers.http_server import build_app
from tests.support.servers import serve_app
from tests.support.waiting import until

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with serve_app(build_app()) as url:
        yield url


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest, http_url: str, tmp_path: Path) -> tuple[str, str, Path]:
    """(transport, URI of the MCP server without its #TOOL, directory where stdio cancels are marked)."""
    if request.param == "stdio":
        query = (
            f"args=-m+tests.support.mcp_servers.stdio_server&cwd={quote(str(ROOT))}"
            f"&env=SWITCHBOARD_MCP_MARKERS={quote(str(tmp_path))}"
        )
        return "stdio", f"mcp+stdio:{quote(sys.executable)}?{query}", tmp_path
    return "http", f"mcp+{http_url}/mcp", tmp_path


@pytest.fixture
async def gateway() -> AsyncIterator[Gateway]:
    async with Gateway() as gateway:
        yield gateway


async def _cancel_reached_the_tool(transport: str, markers: Path, text: str) -> None:
    """The hang tool marks its cancellation: in this process (HTTP) or as a file (stdio, another process)."""
    await until(
        lambda: text in mcp_tools.CANCELLED if transport == "http" else (markers / text).exists(),
        f"the hang tool to see the cancellation of {text!r}",
    )


async def test_sync_streaming_and_conversational_modes(gateway: Gateway, server: tuple[str, str, Path]) -> None:
    _, base, _ = server
    gateway.add_agent_tool("echo", base + "#echo")
    gateway.add_agent_tool("count", base + "#count", mode="streaming")
    gateway.add_agent_tool("chat", base + "#echo", mode={"conversational": {"max_turns": 3}})

    result = await gateway.call_tool("echo", "hello", run_id="r-sync")
    assert (result.text, result.state) == ("echo: hello", "completed")
    assert types_of(await call_events(gateway, "r-sync")) == ["invoked", "completed"]

    streamed = await gateway.call_tool("count", "sheep", run_id="r-stream")
    assert (streamed.text, streamed.state) == ("counted 3 for sheep", "completed")
    assert streamed.artifacts[0].parts[-1].data == {"result": "counted 3 for sheep"}  # type: ignore[union-attr]
    events = await call_events(gateway, "r-stream")
    assert types_of(events) == ["invoked", "progress", "progress", "progress", "progress", "completed"]
    assert progress_texts(events) == ["step 1 of sheep", "step 2 of sheep", "step 3 of sheep", "counted 3 for sheep"]
    notes = [e.fields for e in events if e.fields.get("kind") == "status"]
    assert [n["data"][0] for n in notes] == [{"progress": float(i), "total": 3.0} for i in (1, 2, 3)]

    chat = await gateway.call_tool("chat", "hi")
    assert (chat.turns, chat.state, chat.text) == (1, "completed", "echo: hi"), "a tool call completes in one turn"

    by_arguments = await gateway.call_tool("count", {"text": "goats", "n": 2, "delay": 0})
    assert by_arguments.text == "counted 2 for goats" and by_arguments.chunks == 3


async def test_idle_timeout_sends_mcp_cancellation_that_reaches_the_tool(
    gateway: Gateway, server: tuple[str, str, Path]
) -> None:
    transport, base, markers = server
    # generous: the tool's first progress must come within it also on a loaded machine
    gateway.add_agent_tool("hang", base + "#hang", mode="streaming", streaming={"idle_timeout_secs": 1.5})
    with pytest.raises(AgentToolTimeout) as caught:
        await gateway.call_tool("hang", f"idle-{transport}", run_id="r-idle")
    assert caught.value.reason == "idle_timeout", "connecting (spawning the stdio server) is not idle time"
    await _cancel_reached_the_tool(transport, markers, f"idle-{transport}")
    started = time.monotonic()
    with pytest.raises(AgentToolTimeout) as again:
        await gateway.call_tool("hang", f"again-{transport}")
    assert again.value.reason == "idle_timeout"
    assert time.monotonic() - started < 10, "the idle timeout ended it, not the tool's 60 s hang"
    events = await call_events(gateway, "r-idle")
    assert types_of(events) == ["invoked", "progress", "terminated"]
    assert progress_texts(events) == [f"started idle-{transport}"]
    assert events[-1].fields["cancel_acknowledged"] is True


async def test_timeout_ms_cancels_a_sync_call(gateway: Gateway, server: tuple[str, str, Path]) -> None:
    transport, base, markers = server
    gateway.add_agent_tool("echo", base + "#echo")
    await gateway.call_tool("echo", "connect first")
    gateway.add_agent_tool("hang", base + "#hang", timeout_ms=300)
    started = time.monotonic()
    with pytest.raises(AgentToolTimeout) as caught:
        await gateway.call_tool("hang", f"sync-{transport}", run_id="r-timeout")
    assert 0.3 <= time.monotonic() - started < 10, "timeout_ms ended it, not the tool's 60 s hang"
    assert caught.value.reason == "timeout"
    await _cancel_reached_the_tool(transport, markers, f"sync-{transport}")
    assert (await call_events(gateway, "r-timeout"))[-1].fields["cancel_acknowledged"] is True


async def test_tool_errors_and_unknown_tools_fail_the_call(gateway: Gateway, server: tuple[str, str, Path]) -> None:
    _, base, _ = server
    gateway.add_agent_tool("fail", base + "#fail", mode="streaming")
    gateway.add_agent_tool("nope", base + "#nope")
    with pytest.raises(AgentTaskFailed, match="cannot do this") as failed:
        await gateway.call_tool("fail", "this", run_id="r-fail")
    assert failed.value.state == "failed"
    assert (await call_events(gateway, "r-fail"))[-1].fields["reason"] == "task_failed"
    with pytest.raises(PeerProtocolError, match="no tool 'nope'.*count, crash, echo, fail, hang"):
        await gateway.call_tool("nope", "x")
    card = await gateway.peer(base + "#count").card()
    assert card.name == "count" and card.description == "Count to n, reporting progress at each step."


async def test_a_stdio_server_that_dies_mid_call_fails_the_call_and_the_next_call_reconnects(
    gateway: Gateway, tmp_path: Path
) -> None:
    base = f"mcp+stdio:{quote(sys.executable)}?args=-m+tests.support.mcp_servers.stdio_server&cwd={quote(str(ROOT))}"
    gateway.add_agent_tool("crash", base + "#crash")
    gateway.add_agent_tool("echo", base + "#echo")
    assert (await gateway.call_tool("echo", "before")).text == "echo: before"
    with anyio.fail_after(10), pytest.raises(PeerConnectionError) as caught:
        await gateway.call_tool("crash", "now", run_id="r-crash")
    assert types_of(await call_events(gateway, "r-crash")) == ["invoked", "error"]
    assert caught.value.reason == "connection_error"
    with anyio.fail_after(10):
        assert (await gateway.call_tool("echo", "after")).text == "echo: after"


async def test_a_stdio_command_that_cannot_start_is_a_connection_error(gateway: Gateway, tmp_path: Path) -> None:
    gateway.add_agent_tool("broken", f"mcp+stdio:{tmp_path}/no-such-command#tool")
    with pytest.raises(PeerConnectionError, match="cannot connect to the MCP server"):
        await gateway.call_tool("broken", "x", run_id="r-broken")
    assert types_of(await call_events(gateway, "r-broken")) == ["invoked", "error"]


async def test_a_stdio_server_that_never_answers_fails_at_the_connect_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's grace for a server to exit is made an hour: the call still fails at the deadline, the
    server still running, because shutting it down is not on the caller's clock. The test then kills it."""
    monkeypatch.setattr(mcp.client.stdio, "PROCESS_TERMINATION_TIMEOUT", 3600.0)
    pid_file = tmp_path / "pid"
    script = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)"
    mute = f"mcp+stdio:{quote(sys.executable)}?args={quote(shlex.join(['-c', script, str(pid_file)]))}#tool"
    async with Gateway(limits=PeerLimits(connect_timeout_s=0.5)) as gateway:
        gateway.add_agent_tool("mute", mute)
        started = time.monotonic()
        with pytest.raises(AgentToolTimeout) as caught:
            await gateway.call_tool("mute", "x", run_id="r-mute")
        elapsed = time.monotonic() - started
        await until(lambda: pid_file.exists() and pid_file.read_text(), "the mute server to write its pid")
        pid = int(pid_file.read_text())
        try:
            os.kill(pid, 0)  # still there: the hour of grace has not passed, and the caller did not wait for it
        finally:
            os.kill(pid, signal.SIGKILL)
        assert 0.5 <= elapsed < 10
        assert caught.value.reason == "connect_timeout"
        assert types_of(await call_events(gateway, "r-mute")) == ["invoked", "error"]


async def test_a_blob_resource_becomes_a_file_part_with_its_uri_in_metadata(gateway: Gateway, http_url: str) -> None:
    gateway.add_agent_tool("blob", f"mcp+{http_url}/mcp#blob")
    result = await gateway.call_tool("blob", "binary!", run_id="r-blob")
    part = result.artifacts[0].parts[0]
    assert isinstance(part, FilePart) and part.metadata == {"uri": "file:///blob.bin"}
    assert part.file.bytes is not None and base64.b64decode(part.file.bytes) == b"binary!"
    assert (part.file.uri, part.file.mime_type) == (None, "application/octet-stream")
    assert types_of(await call_events(gateway, "r-blob")) == ["invoked", "completed"]


@pytest.mark.parametrize("mode", ["sync", "streaming"])
async def test_a_result_that_cannot_be_read_is_a_bad_answer_not_an_exception_group(
    gateway: Gateway, http_url: str, mode: str
) -> None:
    gateway.add_agent_tool("bad", f"mcp+{http_url}/mcp#bad_image", mode=mode)
    with pytest.raises(PeerProtocolError, match="cannot be read") as caught:
        await gateway.call_tool("bad", "x", run_id="r-bad")
    assert caught.value.reason == "bad_answer"
    events = await call_events(gateway, "r-bad")
    assert types_of(events) == ["invoked", "error"] and events[-1].fields["reason"] == "bad_answer"
    # Straight through the Peer too: its errors are AgentToolErrors, never a group.
    peer = gateway.peer(f"mcp+{http_url}/mcp#bad_image")
    params = TaskSendParams(message=Message.user("x"))

    async def call() -> None:
        if mode == "sync":
            await peer.send(params)
            return
        async with peer.subscribe(params) as stream:
            async for _ in stream:
                pass

    with pytest.raises(PeerProtocolError, match="cannot be read"):
        await call()


async def test_a_slow_consumer_holds_the_stream_back_in_a_bounded_buffer(gateway: Gateway, http_url: str) -> None:
    peer = gateway.peer(f"mcp+{http_url}/mcp#count")
    n = STREAM_BUFFER * 3
    params = TaskSendParams(message=Message(role="user", parts=[DataPart(data={"text": "t", "n": n, "delay": 0})]))
    seen = []
    async with peer.subscribe(params) as stream:
        async for item in stream:
            seen.append(item)
            if len(seen) == 1:
                # The server goes on while nothing is read: the buffer fills, then its next item waits for room.
                receive = stream.ag_frame.f_locals["receive"]  # type: ignore[attr-defined]

                def held_back(receive: Any = receive) -> bool:
                    stats = receive.statistics()
                    return stats.current_buffer_used == STREAM_BUFFER and stats.tasks_waiting_send > 0

                await until(
                    held_back,
                    "a full buffer with the next item held back",
                )
    assert isinstance(seen[-1], StatusEvent) and seen[-1].final and seen[-1].status.state.value == "completed"


async def test_inner_async_generators_are_closed_not_left_to_the_gc(
    gateway: Gateway, server: tuple[str, str, Path]
) -> None:
    _, base, _ = server
    gateway.add_agent_tool("count", base + "#count", mode="streaming")
    gateway.add_agent_tool("hang", base + "#hang", mode="streaming", streaming={"idle_timeout_secs": 0.2})
    with finalized_async_generators() as finalized:
        await gateway.call_tool("count", "sheep")
        with pytest.raises(AgentToolTimeout):
            await gateway.call_tool("hang", "idle")
        gc.collect()
    assert not [name for name in finalized if name in {"_drain", "_chain", "_lines", "aiter_ndjson"}], finalized


class _HeaderLog:
    """ASGI wrapper that writes down the Authorization header of every request (lifespan passed through)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[str | None] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.seen.append(dict(scope["headers"]).get(b"authorization", b"").decode() or None)
        await self.app(scope, receive, send)


async def test_an_mcp_tool_over_http_carries_its_own_token_and_another_tool_none() -> None:
    logged = _HeaderLog(build_app())
    with serve_app(logged) as url:
        async with Gateway() as gateway:
            gateway.add_agent_tool("secured", f"mcp+{url}/mcp#echo", token="mcp-token")
            assert (await gateway.call_tool("secured", "hi")).text == "echo: hi"
            with_token = len(logged.seen)
            gateway.add_agent_tool("open", f"mcp+{url}/mcp#echo")
            assert (await gateway.call_tool("open", "hi")).text == "echo: hi"
    assert with_token > 0 and set(logged.seen[:with_token]) == {"Bearer mcp-token"}
    assert set(logged.seen[with_token:]) == {None}
