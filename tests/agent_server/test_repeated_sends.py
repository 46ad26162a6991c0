"""A send repeated on a task the server holds (same id, same message) never starts the agent a second time.

The scripted agent's ``Probe`` counts how often its code began per task: a retried send,
a second stream of the same send, or a gateway that re-sends after taking over a call
must leave it at one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import anyio
import httpx
import orjson
import pytest

from agent_server import MemoryTaskStore, TaskManager, create_app
from agent_server.testing import Probe, scripted_agent
from protocol import Message, ProtocolError, StreamEvent, TaskSendParams, TaskState, TextPart
from tests.support.servers import serve_app
from tests.support.waiting import until

pytestmark = pytest.mark.anyio


def _send(text: str, task_id: str, message_id: str | None = None) -> TaskSendParams:
    return TaskSendParams(id=task_id, message=Message(role="user", parts=[TextPart(text=text)], message_id=message_id))


@asynccontextmanager
async def _manager(probe: Probe) -> AsyncIterator[TaskManager]:
    manager = TaskManager(scripted_agent(probe=probe), MemoryTaskStore())
    async with manager.running():
        yield manager


async def _collect(events: AsyncIterator[StreamEvent]) -> list[StreamEvent]:
    async with aclosing(events) as stream:  # type: ignore[type-var]
        return [event async for event in stream]


async def test_a_send_repeated_while_its_task_works_waits_for_that_run_and_starts_none() -> None:
    probe = Probe()
    async with _manager(probe) as manager:
        answers = []

        async def send() -> None:
            answers.append(await manager.send(_send("stream 3 0.05", "t1")))

        async with anyio.create_task_group() as group:
            group.start_soon(send)
            await until(lambda: probe.starts("t1") == 1, "the first run to start")
            group.start_soon(send)
    assert probe.starts("t1") == 1
    assert [a.status.state for a in answers] == [TaskState.COMPLETED, TaskState.COMPLETED]
    assert answers[0].output_text == answers[1].output_text == "chunk-0 chunk-1 chunk-2 "


async def test_a_stream_repeated_follows_the_same_turn_from_its_first_line() -> None:
    probe = Probe()
    async with _manager(probe) as manager:
        first = manager.subscribe(_send("stream 4 0.05", "t2"))
        async with aclosing(first) as events:
            head = await anext(events)
            again = await _collect(manager.subscribe(_send("stream 4 0.05", "t2")))
            rest = [event async for event in events]
        after = await _collect(manager.subscribe(_send("stream 4 0.05", "t2")))
    assert probe.starts("t2") == 1
    original = [head, *rest]
    assert [e.seq for e in again] == [e.seq for e in original] == list(range(6))
    assert again[-1].final and after == again


async def test_a_send_repeated_on_a_finished_task_answers_it_as_it_is_and_another_message_is_still_refused() -> None:
    probe = Probe()
    async with _manager(probe) as manager:
        done = await manager.send(_send("echo one", "t3"))
        again = await manager.send(_send("echo one", "t3"))
        started = await manager.start(_send("echo one", "t3"))
        with pytest.raises(ProtocolError) as refused:
            await manager.send(_send("echo two", "t3"))
    assert probe.starts("t3") == 1
    assert again.status.state is TaskState.COMPLETED and again.output_text == done.output_text == "one"
    assert started.status.state is TaskState.COMPLETED
    assert refused.value.http_status == 409


async def test_the_same_message_id_is_a_repeat_also_on_a_task_waiting_for_input_and_a_new_id_a_new_turn() -> None:
    probe = Probe()
    async with _manager(probe) as manager:
        await manager.send(_send("ask which plan?", "t4", message_id="m1"))
        await manager.send(_send("the big one", "t4", message_id="m2"))
        repeated = await manager.send(_send("the big one", "t4", message_id="m2"))
    assert probe.starts("t4") == 2, "two turns, the repeat of the second none"
    assert repeated.status.state is TaskState.COMPLETED and repeated.output_text == "got: the big one"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, Probe]]:
    probe = Probe()
    with serve_app(create_app(scripted_agent(probe=probe))) as url:
        yield url, probe


def _body(text: str, task_id: str) -> dict[str, Any]:
    return {"id": task_id, "message": {"role": "user", "parts": [{"type": "text", "text": text}]}}


def test_over_http_a_send_and_a_send_subscribe_repeated_run_the_agent_once(served: tuple[str, Probe]) -> None:
    url, probe = served
    with httpx.Client(base_url=url, timeout=30) as http:
        first = http.post("/tasks/send", json=_body("echo hi", "h1")).json()
        second = http.post("/tasks/send", json=_body("echo hi", "h1")).json()
        streamed = http.post("/tasks/sendSubscribe", json=_body("echo hi", "h1"))
    lines = [orjson.loads(line) for line in streamed.text.splitlines()]
    assert probe.starts("h1") == 1
    assert first["status"]["state"] == second["status"]["state"] == "completed"
    assert second["artifacts"] == first["artifacts"]
    assert [line["seq"] for line in lines] == list(range(len(lines))) and lines[-1]["final"]


def test_a_standard_send_message_repeated_by_message_id_on_a_finished_task_answers_it(
    served: tuple[str, Probe],
) -> None:
    url, probe = served
    message = {"messageId": "std-1", "role": "ROLE_USER", "parts": [{"text": "echo standard"}]}
    request = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    with httpx.Client(base_url=url, timeout=30, headers={"A2A-Version": "1.0"}) as http:
        task = http.post("/", json=request).json()["result"]["task"]
        again = {**request, "params": {"message": {**message, "taskId": task["id"]}}}
        repeated = http.post("/", json=again).json()
        other = {**request, "params": {"message": {**message, "messageId": "std-2", "taskId": task["id"]}}}
        refused = http.post("/", json=other).json()
    assert probe.starts(task["id"]) == 1
    assert repeated["result"]["task"]["id"] == task["id"]
    assert repeated["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "takes no more messages" in refused["error"]["message"]


async def test_a_message_id_reused_for_other_words_is_a_new_turn_not_a_repeat() -> None:
    """Clients that reuse ids (the A2A TCK names its scenarios so) still get each message answered."""
    probe = Probe()
    async with _manager(probe) as manager:
        asked = await manager.send(_send("ask which one?", "t-reused", "m-1"))
        assert asked.status.state is TaskState.INPUT_REQUIRED
        answered = await manager.send(_send("blue", "t-reused", "m-1"))
    assert answered.status.state is TaskState.COMPLETED and answered.output_text.endswith("got: blue")
    assert [m.text for m in answered.history or [] if m.role == "user"] == ["ask which one?", "blue"]
