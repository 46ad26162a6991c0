"""A streamed answer is stored once in the event log (memory, SQLite, Redis): the agent-tool call's completed event
and the swarm's message leave out a text that is just what streamed, and every reader gets the whole text back."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from agent_server.testing import scripted_agent
from gateway import Agent, Gateway, Runner
from gateway.cli.run_view import RunView
from gateway.event_log import EventLog
from gateway.models import ModelResponse, ScriptedModel
from gateway.recording.events import (
    AgentToolCompletedEvent,
    Event,
    MessageEvent,
    RunCompletedEvent,
    call_text,
    message_text,
)
from tests.support.event_logs import KINDS, event_log_of

pytestmark = pytest.mark.anyio

ANSWER = "".join(f"chunk-{i} " for i in range(20))


@pytest.fixture(params=KINDS)
async def log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[EventLog]:
    store = event_log_of(request.param, tmp_path, lambda: str(request.getfixturevalue("redis_url")))
    yield store
    await store.aclose()


def _stored_copies(events: list[Event], text: str) -> int:
    """How many times ``text`` is in the stored events, whole or in pieces (their text fields summed)."""
    held = sum(len(str(e.fields.get(key) or "")) for e in events for key in ("text", "content"))
    return round(held / len(text))


async def test_a_streamed_tool_answer_is_stored_once_and_read_back_whole(log: EventLog) -> None:
    async with Gateway(event_log=log) as gateway:
        uri = gateway.register_local_agent("scripted", scripted_agent())
        gateway.add_agent_tool("writer", uri, mode="streaming")
        result = await gateway.call_tool("writer", "stream 20 0", run_id="r-tool")
    assert result.text == ANSWER
    events = await log.read("r-tool")
    completed = events[-1]
    assert isinstance(completed, AgentToolCompletedEvent)
    assert completed.text is None and completed.text_in_chunks is True
    assert _stored_copies(events, ANSWER) == 1
    assert call_text(events, result.call_id) == ANSWER


async def test_a_tool_answer_that_did_not_stream_keeps_its_text(log: EventLog) -> None:
    async with Gateway(event_log=log) as gateway:
        uri = gateway.register_local_agent("scripted", scripted_agent())
        gateway.add_agent_tool("writer", uri, mode="sync")
        result = await gateway.call_tool("writer", "stream 3 0", run_id="r-sync")
    events = await log.read("r-sync")
    completed = events[-1]
    assert isinstance(completed, AgentToolCompletedEvent) and completed.text == result.text
    assert completed.text_in_chunks is None and call_text(events, result.call_id) == result.text


async def test_a_streamed_swarm_message_is_stored_once_and_read_back_whole(log: EventLog) -> None:
    model = ScriptedModel([ModelResponse(content=ANSWER)])
    runner = Runner(Agent("helper", "You help.", model=model), event_log=log)
    events_seen = [event async for event in runner.run_stream("s", "go")]
    run_id = events_seen[0].run_id
    events = await log.read(run_id)
    [message] = [e for e in events if isinstance(e, MessageEvent)]
    assert message.content == "" and message.content_in_deltas is True
    assert message_text(events, message) == ANSWER
    [completed] = [e for e in events if isinstance(e, RunCompletedEvent)]
    assert completed.content == ANSWER, "the turn's answer stays whole in run_completed: it is the API's answer"
    assert _stored_copies(events, ANSWER) == 2, "the deltas and run_completed; the message no longer repeats them"
    view = io.StringIO()
    shown = RunView(view)
    for event in events:
        shown.show(orjson.loads(event.to_json()))
    assert f"helper: {ANSWER.strip()}" in view.getvalue()


async def test_a_message_that_did_not_stream_keeps_its_content(log: EventLog) -> None:
    model = ScriptedModel([ModelResponse(content="hello")])
    response = await Runner(Agent("helper", "You help.", model=model), event_log=log).run_async("s", "go")
    [message] = [e for e in await log.read(response.run_id) if isinstance(e, MessageEvent)]
    assert message.content == "hello" and message.content_in_deltas is None
