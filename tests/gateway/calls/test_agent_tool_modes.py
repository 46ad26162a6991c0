"""Agent-as-tool modes (sync, streaming, conversational) against a real agent server on loopback and local://.

The agent is agent_server.testing's scripted agent: each message's text says what it does.
"""

from __future__ import annotations

import gc

import pytest

from agent_server.testing import scripted_agent
from gateway import (
    AgentTaskFailed,
    AgentToolResult,
    AgentToolTimeout,
    Gateway,
    InvalidAgentURI,
    PeerConnectionError,
    UnknownAgentTool,
)
from gateway.models.base import ToolSpec
from gateway.recording.events import EventType
from gateway.recording.recorder import RunRecorder
from gateway.tools import Tool
from protocol import Message
from tests.support.agent_tools import (  # noqa: F401 (fixtures)
    agent,
    call_events,
    finalized_async_generators,
    progress_texts,
    scripted_url,
    types_of,
)

pytestmark = pytest.mark.anyio


async def test_sync_returns_the_tasks_whole_output_and_records_invoked_then_completed(
    agent: tuple[Gateway, str],
) -> None:
    gateway, uri = agent
    gateway.add_agent_tool("writer", uri)
    result = await gateway.call_tool("writer", "stream 3 0.001 0.01", run_id="r-sync")
    assert isinstance(result, AgentToolResult)
    assert (result.text, result.state, result.mode) == ("chunk-0 chunk-1 chunk-2 ", "completed", "sync")
    assert result.cost_usd == pytest.approx(0.03)
    assert [p.text for a in result.artifacts for p in a.parts] == ["chunk-0 chunk-1 chunk-2 "]
    events = await call_events(gateway, "r-sync")
    assert types_of(events) == ["invoked", "completed"]
    invoked, completed = events
    assert invoked.fields["input"] == "stream 3 0.001 0.01" and invoked.fields["mode"] == "sync"
    assert invoked.fields["agent"] == uri and invoked.fields["tool"] == "writer"
    assert completed.fields["text"] == result.text and completed.fields["state"] == "completed"
    assert completed.fields["task_id"] == result.task_id == invoked.fields["task_id"]
    assert completed.fields["accumulated_cost_usd"] == pytest.approx(0.03)


async def test_streaming_passes_each_line_on_as_progress_and_accumulates_the_whole_output(
    agent: tuple[Gateway, str],
) -> None:
    gateway, uri = agent
    gateway.add_agent_tool("researcher", uri, mode="streaming")
    result = await gateway.call_tool("researcher", "stream 4 0.01 0.001", run_id="r-stream")
    assert result.text == "chunk-0 chunk-1 chunk-2 chunk-3 "
    assert result.state == "completed" and result.cost_usd == pytest.approx(0.004)
    # How appended parts are folded is protocol.merge_artifact's (the agent server's) rule; the text is all there.
    assert len(result.artifacts) == 1
    assert "".join(p.text for p in result.artifacts[0].parts) == "chunk-0 chunk-1 chunk-2 chunk-3 "  # type: ignore[union-attr]
    events = await call_events(gateway, "r-stream")
    assert types_of(events) == ["invoked", "progress", "progress", "progress", "progress", "progress", "completed"]
    progress = [e for e in events if e.type == EventType.AGENT_TOOL_PROGRESS.value]
    assert [e.fields["chunk_index"] for e in progress] == [0, 1, 2, 3, 4]
    assert progress[0].fields["kind"] == "status" and progress[0].fields["state"] == "working"
    assert progress_texts(events) == ["chunk-0 ", "chunk-1 ", "chunk-2 ", "chunk-3 "]
    assert [e.fields["accumulated_cost_usd"] for e in progress[1:]] == pytest.approx([0.001, 0.002, 0.003, 0.004])
    assert events[-1].fields["chunks"] == 5 == result.chunks


async def test_conversational_keeps_one_task_and_session_and_stops_at_completed(agent: tuple[Gateway, str]) -> None:
    gateway, uri = agent
    gateway.add_agent_tool("interviewer", uri, mode={"conversational": {"max_turns": 5}})
    result = await gateway.call_tool("interviewer", "ask what colour?", run_id="r-conv")
    assert result.turns == 2 and result.state == "completed"
    assert result.text == "what colour?\ngot: what colour?", "each reply is the next turn's input"
    task = await gateway.peer(uri).get(result.task_id or "")
    assert task.session_id == result.session_id
    assert [m.text for m in task.history or []] == [
        "ask what colour?",
        "what colour?",
        "what colour?",
        "got: what colour?",
    ]
    events = await call_events(gateway, "r-conv")
    assert types_of(events) == ["invoked", "progress", "progress", "completed"]
    turns = [(e.fields["turn"], e.fields["state"], e.fields["text"]) for e in events if e.type == "agent_tool_progress"]
    assert turns == [(1, "input-required", "what colour?"), (2, "completed", "got: what colour?")]


async def test_conversational_next_input_callable_decides_and_max_turns_bounds(agent: tuple[Gateway, str]) -> None:
    gateway, uri = agent
    asked: list[tuple[str, int]] = []

    async def answer(reply: str, so_far: AgentToolResult) -> str:
        asked.append((reply, so_far.turns))
        return "blue"

    gateway.add_agent_tool("guided", uri, mode={"conversational": {"next_input": answer}})
    result = await gateway.call_tool("guided", "ask favourite colour?")
    assert result.text.endswith("got: blue") and result.turns == 2
    assert asked == [("favourite colour?", 1)]

    gateway.add_agent_tool("one_turn", uri, mode={"conversational": {"max_turns": 1}})
    stopped = await gateway.call_tool("one_turn", "ask anything?")
    assert (stopped.turns, stopped.state, stopped.text) == (1, "input-required", "anything?")

    gateway.add_agent_tool("declined", uri, mode={"conversational": {"next_input": lambda reply, result: None}})
    declined = await gateway.call_tool("declined", "ask anything?")
    assert (declined.turns, declined.state) == (1, "input-required")


async def test_a_next_input_that_raises_ends_the_call_with_a_recorded_error(agent: tuple[Gateway, str]) -> None:
    gateway, uri = agent

    def broken(reply: str, so_far: AgentToolResult) -> str:
        raise ValueError(f"cannot answer {reply!r}")

    gateway.add_agent_tool("broken", uri, mode={"conversational": {"next_input": broken}})
    with pytest.raises(ValueError, match="cannot answer"):
        await gateway.call_tool("broken", "ask which colour?", run_id="r-broken")
    events = await call_events(gateway, "r-broken")
    assert types_of(events) == ["invoked", "progress", "error"], "the turn received stays, the failure is the last step"
    error = events[-1].fields
    assert (error["reason"], error["error"], error["turns"]) == ("internal_error", "ValueError", 1)


async def test_sync_and_streaming_end_at_input_required_with_the_question(agent: tuple[Gateway, str]) -> None:
    gateway, uri = agent
    gateway.add_agent_tool("ask_sync", uri)
    gateway.add_agent_tool("ask_stream", uri, mode="streaming")
    for name in ("ask_sync", "ask_stream"):
        result = await gateway.call_tool(name, "ask which account?")
        assert (result.state, result.text) == ("input-required", "which account?")


async def test_a_handoff_request_is_on_the_result(agent: tuple[Gateway, str]) -> None:
    gateway, uri = agent
    gateway.add_agent_tool("h_sync", uri)
    gateway.add_agent_tool("h_stream", uri, mode="streaming")
    for name in ("h_sync", "h_stream"):
        result = await gateway.call_tool(name, "handoff billing refund question", run_id=f"r-{name}")
        assert result.handoff is not None and result.handoff.target == "billing"
        assert result.handoff.reason == "refund question"
        completed = (await gateway.event_log.read(f"r-{name}"))[-1]
        assert completed.fields["handoff"]["target"] == "billing"


async def test_an_agent_that_fails_fails_the_call_with_its_message(agent: tuple[Gateway, str]) -> None:
    gateway, uri = agent
    gateway.add_agent_tool("f_sync", uri)
    gateway.add_agent_tool("f_stream", uri, mode="streaming")
    for name in ("f_sync", "f_stream"):
        with pytest.raises(AgentTaskFailed) as caught:
            await gateway.call_tool(name, "fail the disk is full", run_id=f"r-{name}")
        assert caught.value.reason == "task_failed" and "the disk is full" in str(caught.value)
        assert caught.value.partial is not None and caught.value.partial.state == "failed"
        events = await call_events(gateway, f"r-{name}")
        assert types_of(events)[-1] == "error" and events[-1].fields["reason"] == "task_failed"


async def test_inside_a_run_the_tool_records_into_the_current_run_and_serves_a_model(
    agent: tuple[Gateway, str],
) -> None:
    gateway, uri = agent
    tool = gateway.add_agent_tool("echoer", uri, description="Echoes.")
    assert isinstance(tool, Tool)
    assert tool.spec == ToolSpec("echoer", "Echoes.", tool.parameters)
    assert tool.parameters["required"] == ["input"] and tool.parameters["properties"]["input"]["type"] == "string"
    recorder = RunRecorder(gateway.event_log, "swarm-run")
    await recorder.emit(EventType.RUN_STARTED)
    with recorder.active():
        answer = await tool.invoke({"input": "echo from the model"}, {"user": "ann"})
    assert answer == "from the model"
    events = await gateway.event_log.read("swarm-run")
    assert [e.type for e in events] == ["run_started", "agent_tool_invoked", "agent_tool_completed"]
    assert not await gateway.event_log.is_closed("swarm-run"), "the swarm run is not the tool's to close"

    own = await gateway.call_tool("echoer", "echo alone")
    assert await gateway.event_log.is_closed(own.run_id), "a direct call's own run is closed when it ends"
    failed = await tool.invoke({"input": "fail no luck"}, {})
    assert "failed (task_failed)" in failed and "no luck" in failed
    assert "needs an 'input' string" in await tool.invoke({}, {})


async def test_a_message_input_reaches_the_agent_as_is(agent: tuple[Gateway, str]) -> None:
    gateway, uri = agent
    gateway.add_agent_tool("msg", uri)
    result = await gateway.call_tool("msg", Message.user("echo as a message"))
    assert result.text == "as a message"


async def test_configuration_errors_fail_when_the_tool_is_added() -> None:
    async with Gateway() as gateway:
        with pytest.raises(InvalidAgentURI, match="'ftp://x'"):
            gateway.add_agent_tool("a", "ftp://x")
        with pytest.raises(ValueError, match="unknown agent-tool mode"):
            gateway.add_agent_tool("b", "http://127.0.0.1:1", mode="chatty")
        with pytest.raises(ValueError, match="max_turns must be an integer"):
            gateway.add_agent_tool("c", "http://127.0.0.1:1", mode={"conversational": {"max_turns": 0}})
        with pytest.raises(ValueError, match="unknown budget option"):
            gateway.add_agent_tool("d", "http://127.0.0.1:1", budget={"max_usd": 1})
        with pytest.raises(ValueError, match="idle_timeout_secs"):
            gateway.add_agent_tool("e", "http://127.0.0.1:1", streaming={"idle_timeout_secs": 0})
        with pytest.raises(ValueError, match="not valid"):
            gateway.add_agent_tool("has space", "http://127.0.0.1:1")
        gateway.add_agent_tool("f", "http://127.0.0.1:1")
        with pytest.raises(ValueError, match="already exists"):
            gateway.add_agent_tool("f", "http://127.0.0.1:1")
        with pytest.raises(UnknownAgentTool, match="'nope'.*known: f"):
            await gateway.call_tool("nope", "hi")


async def test_an_unregistered_local_agent_is_a_recorded_connection_error() -> None:
    async with Gateway() as gateway:
        gateway.add_agent_tool("ghost", "local://ghost")
        with pytest.raises(PeerConnectionError, match="no agent named 'ghost'") as caught:
            await gateway.call_tool("ghost", "hi", run_id="r-ghost")
        assert caught.value.reason == "connection_error"
        events = await gateway.event_log.read("r-ghost")
        assert [e.type for e in events] == ["agent_tool_invoked", "agent_tool_error"]


async def test_a_stream_closes_the_generators_it_opens(agent: tuple[Gateway, str]) -> None:
    """Each inner async generator is closed by its owner, none is left to asyncio's GC finalizer."""
    gateway, uri = agent
    gateway.add_agent_tool("streamer", uri, mode="streaming", streaming={"idle_timeout_secs": 0.2})
    with finalized_async_generators() as finalized:
        await gateway.call_tool("streamer", "stream 3 0 0")
        with pytest.raises(AgentToolTimeout):
            await gateway.call_tool("streamer", "sleep 30")
        gc.collect()
    assert not [name for name in finalized if name in {"_chain", "_lines", "aiter_raw", "aiter_ndjson"}], finalized


async def test_a_local_or_mcp_tool_on_a_gateway_not_entered_fails_recorded() -> None:
    gateway = Gateway()
    gateway.register_local_agent("echo", scripted_agent())
    gateway.add_agent_tool("echo", "local://echo")
    gateway.add_agent_tool("mcp", "mcp+http://127.0.0.1:9/mcp#echo")
    for name in ("echo", "mcp"):
        with pytest.raises(PeerConnectionError, match="async with Gateway") as caught:
            await gateway.call_tool(name, "hi", run_id=f"r-{name}")
        assert caught.value.partial is not None
        events = await call_events(gateway, f"r-{name}")
        assert types_of(events) == ["invoked", "error"] and events[-1].fields["reason"] == "connection_error"
        note = await gateway.tool_function(name).invoke({"input": "hi"})
        assert note.startswith(f"[agent tool {name} failed (connection_error):") and "async with Gateway" in note
    await gateway.aclose()
