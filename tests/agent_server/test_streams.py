"""Streams over real HTTP: live lines, cancel, dropped connections, resubscribe, restarts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from agent_server import TaskContext, as_hosted_agent, create_app
from agent_server.testing import Probe, scripted_agent
from gateway import Gateway
from protocol import Artifact, DataPart, TextPart, aiter_ndjson
from tests.support.lockstep import Lockstep
from tests.support.servers import serve_app
from tests.support.waiting import until

pytestmark = pytest.mark.anyio

PROBE = Probe()


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve_app(create_app(scripted_agent(probe=PROBE))) as url:
        yield url


@pytest.fixture
async def client(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url, timeout=5) as http:
        yield http


def _send_body(text: str, task_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"message": {"parts": [{"type": "text", "text": text}]}}
    if task_id is not None:
        body["id"] = task_id
    return body


async def _lines(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    async for line in aiter_ndjson(response.aiter_raw()):
        assert isinstance(line, dict)
        yield line


def _assert_contiguous(lines: list[dict[str, Any]], first_seq: int = 0) -> None:
    assert [line["seq"] for line in lines] == list(range(first_seq, first_seq + len(lines)))
    assert [line["final"] for line in lines] == [False] * (len(lines) - 1) + [True]


async def test_lines_arrive_as_the_agent_produces_them() -> None:
    """In lockstep: the agent makes each chunk only after the client has read the line before it."""
    lockstep = Lockstep(chunks=6, cost_usd=0.01)
    lines: list[dict[str, Any]] = []
    with serve_app(create_app(lockstep.agent())) as url:
        async with httpx.AsyncClient(base_url=url, timeout=5) as http:
            body = _send_body("go", "live")
            async with http.stream("POST", "/tasks/sendSubscribe", json=body) as response:
                assert response.headers["content-type"] == "application/x-ndjson"
                async for line in _lines(response):
                    lines.append(line)
                    if len(lines) == 4:  # mid-stream, the task holds the text streamed so far
                        midway = (await http.get("/tasks/live")).json()
                    lockstep.seen()
            task = (await http.get("/tasks/live")).json()
    _assert_contiguous(lines)
    assert midway["status"]["state"] == "working"
    assert midway["artifacts"] == [{"index": 0, "parts": [{"type": "text", "text": "chunk-0 chunk-1 chunk-2 "}]}]
    assert task["artifacts"][0]["parts"] == [{"type": "text", "text": "".join(f"chunk-{i} " for i in range(6))}]
    assert [line["type"] for line in lines] == ["status"] + ["artifact"] * 6 + ["status"]
    assert lines[-1]["status"]["state"] == "completed"
    assert [line.get("cost_usd") for line in lines] == [None] + [0.01] * 6 + [None]
    assert task["metadata"]["cost_usd"] == pytest.approx(0.06)


async def test_cancel_stops_the_agent_and_ends_the_stream(client: httpx.AsyncClient) -> None:
    lines: list[dict[str, Any]] = []
    async with client.stream("POST", "/tasks/sendSubscribe", json=_send_body("sleep 30", "cx")) as response:
        stream = _lines(response)
        lines.append(await stream.__anext__())
        await until(lambda: PROBE.started_at("cx") is not None, "the agent to start task cx")
        assert PROBE.canceled_at("cx") is None
        canceled: list[httpx.Response] = []

        async def cancel() -> None:
            canceled.append(await client.post("/tasks/cancel", json={"id": "cx"}))

        with anyio.fail_after(10):  # the agent sleeps 30 s: only the cancel ends the stream this soon
            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel)
                lines += [item async for item in stream]
    assert canceled[0].status_code == 200 and canceled[0].json()["status"]["state"] == "canceled"
    assert PROBE.wait_canceled("cx", timeout_s=10) is not None, "the cancel reached the agent's own code"
    last = lines[-1]
    assert last["final"] is True and last["type"] == "status" and last["status"]["state"] == "canceled"
    _assert_contiguous(lines)
    task = (await client.get("/tasks/cx")).json()
    assert task["status"]["state"] == "canceled"


async def test_resubscribe_after_a_dropped_connection_returns_exactly_the_missing_events(
    client: httpx.AsyncClient,
) -> None:
    head: list[dict[str, Any]] = []
    async with client.stream("POST", "/tasks/sendSubscribe", json=_send_body("stream 12 0.02", "drop")) as response:
        async for line in _lines(response):
            head.append(line)
            if len(head) == 4:
                break  # leaving the block closes the connection mid-stream

    async def produced_while_away() -> bool:
        task = (await client.get("/tasks/drop")).json()
        return "chunk-5 " in "".join(part["text"] for artifact in task["artifacts"] for part in artifact["parts"])

    await until(produced_while_away, "events made while nobody listened (chunk-5)")
    async with client.stream("POST", "/tasks/resubscribe", json={"id": "drop", "afterSeq": head[-1]["seq"]}) as again:
        tail = [line async for line in _lines(again)]
    _assert_contiguous(head + tail)
    assert tail[0]["seq"] == 4 and tail[-1]["status"]["state"] == "completed"  # dropping did not cancel
    streamed = "".join(line["artifact"]["parts"][0]["text"] for line in head + tail if line["type"] == "artifact")
    task = (await client.get("/tasks/drop")).json()
    assert streamed == task["artifacts"][0]["parts"][0]["text"] == "".join(f"chunk-{i} " for i in range(12))


async def test_with_cancel_on_disconnect_a_dropped_stream_cancels_the_task() -> None:
    probe = Probe()
    with serve_app(create_app(scripted_agent(probe=probe), cancel_on_disconnect=True)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=5) as http:
            async with http.stream("POST", "/tasks/sendSubscribe", json=_send_body("sleep 30", "dc")) as response:
                await response.aiter_raw().__anext__()
            canceled_at = probe.wait_canceled("dc", timeout_s=10)
            task = (await http.get("/tasks/dc")).json()
    assert canceled_at is not None, "the disconnect's cancel reached the agent's own code"
    assert task["status"]["state"] == "canceled"
    assert task["status"]["message"]["parts"][0]["text"] == "canceled: the client disconnected"


async def test_input_required_then_resume_on_the_same_task_id(client: httpx.AsyncClient) -> None:
    first = (await client.post("/tasks/send", json={**_send_body("ask your name?", "conv"), "sessionId": "s1"})).json()
    assert first["status"]["state"] == "input-required"
    assert first["status"]["message"]["parts"][0]["text"] == "your name?"
    async with client.stream("POST", "/tasks/sendSubscribe", json=_send_body("Grace", "conv")) as response:
        lines = [line async for line in _lines(response)]
    _assert_contiguous(lines, first_seq=2)
    assert lines[1]["artifact"]["parts"][0]["text"] == "got: Grace"
    task = (await client.get("/tasks/conv")).json()
    assert task["sessionId"] == "s1" and task["status"]["state"] == "completed"
    assert [m["role"] for m in task["history"]] == ["user", "agent", "user", "agent"]


async def test_a_handoff_line_and_metadata_handoff(client: httpx.AsyncClient) -> None:
    async with client.stream(
        "POST", "/tasks/sendSubscribe", json=_send_body("handoff billing unpaid", "ho")
    ) as response:
        lines = [line async for line in _lines(response)]
    _assert_contiguous(lines)
    assert [line["type"] for line in lines] == ["status", "artifact", "handoff", "status"]
    assert lines[2]["handoff"] == {"target": "billing", "reason": "unpaid", "payload": {"from": "ho"}}
    task = (await client.get("/tasks/ho")).json()
    assert task["metadata"]["handoff"]["target"] == "billing" and task["status"]["state"] == "completed"


async def test_a_sqlite_backed_server_answers_for_its_tasks_after_a_restart(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'tasks.db'}"
    with serve_app(create_app(scripted_agent(), store=store)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=5) as http:
            await http.post("/tasks/send", json=_send_body("stream 3 0 0.5", "done-before"))
            await http.post("/tasks/send", json=_send_body("ask more?", "waiting"))
            async with http.stream("POST", "/tasks/sendSubscribe", json=_send_body("sleep 30", "cut")) as response:
                await response.aiter_raw().__anext__()
    with serve_app(create_app(scripted_agent(), store=store)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=5) as http:
            done = (await http.post("/tasks/get", json={"id": "done-before"})).json()
            events = [line async for line in _resubscribe(http, "done-before")]
            cut = (await http.get("/tasks/cut")).json()
            resumed = (await http.post("/tasks/send", json=_send_body("yes", "waiting"))).json()
    assert done["status"]["state"] == "completed" and done["metadata"]["cost_usd"] == 1.5
    assert done["artifacts"][0]["parts"][0]["text"] == "chunk-0 chunk-1 chunk-2 "
    _assert_contiguous(events)
    assert len(events) == 5
    assert cut["status"]["state"] == "canceled"  # the shutdown canceled the running task and recorded it
    assert resumed["status"]["state"] == "completed"
    assert resumed["artifacts"][0]["parts"][0]["text"] == "got: yes"


async def _resubscribe(http: httpx.AsyncClient, task_id: str) -> AsyncIterator[dict[str, Any]]:
    async with http.stream("POST", "/tasks/resubscribe", json={"id": task_id}) as response:
        async for line in _lines(response):
            yield line


async def _mixed_output(ctx: TaskContext) -> AsyncIterator[Any]:
    """Appended text and data, replaced artifacts, indexes out of order: every rule of the merge."""
    yield "a"
    yield "b"
    yield {"n": 1}
    yield "c"
    yield Artifact(index=2, parts=[TextPart(text="draft")])
    yield Artifact(index=1, name="notes", parts=[TextPart(text="x")])
    yield Artifact(index=2, parts=[TextPart(text="final")])
    yield Artifact(index=1, append=True, last_chunk=True, parts=[TextPart(text="y")])


@pytest.mark.parametrize("where", ["http", "local"])
async def test_sync_and_streaming_agent_tools_get_the_same_artifacts_as_the_task(where: str) -> None:
    hosted = as_hosted_agent(_mixed_output)
    with serve_app(create_app(hosted)) as url:
        async with Gateway() as gateway:
            uri = url if where == "http" else gateway.register_local_agent("mixed", hosted)
            gateway.add_agent_tool("sync", uri)
            gateway.add_agent_tool("streaming", uri, mode="streaming")
            sync = await gateway.call_tool("sync", "go", run_id="r-sync")
            streamed = await gateway.call_tool("streaming", "go", run_id="r-stream")
    assert (
        streamed.artifacts
        == sync.artifacts
        == [
            Artifact(index=0, parts=[TextPart(text="ab"), DataPart(data={"n": 1}), TextPart(text="c")]),
            Artifact(index=1, name="notes", last_chunk=True, parts=[TextPart(text="xy")]),
            Artifact(index=2, parts=[TextPart(text="final")]),
        ]
    )
