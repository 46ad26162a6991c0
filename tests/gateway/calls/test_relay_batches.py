"""The lines that one read from a peer brings are recorded together: their progress events in one
commit of the SQLite log, in order, each line added to the result only once its event is stored;
a line that ends the call ends it after the lines before it were recorded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway.calls.budget import Budget
from gateway.calls.engine import AgentCall, CallSpec
from gateway.calls.tool import Mode
from gateway.errors import AgentToolError, BudgetExceeded
from gateway.event_log import SQLiteEventLog
from gateway.peers.a2a_http import A2AHttpPeer, ByteBudget, _Place
from gateway.peers.base import Peer, StreamItem, StreamRead, items_of
from gateway.peers.http_client import PeerHttpClient
from gateway.peers.limits import PeerLimits
from gateway.recording.events import Event
from gateway.recording.recorder import RunRecorder
from gateway.uri import A2AHttpTarget
from protocol import (
    AgentCard,
    Artifact,
    ArtifactEvent,
    Message,
    StatusEvent,
    Task,
    TaskSendParams,
    TaskState,
    TaskStatus,
    TextPart,
)
from tests.support.waiting import PROCESS_S

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[3]


def _artifact(seq: int, text: str, cost: float = 0.0) -> ArtifactEvent:
    chunk = Artifact(parts=[TextPart(text=text)], append=True)
    return ArtifactEvent(seq=seq, id="task-1", artifact=chunk, cost_usd=cost)


def _final(seq: int) -> StatusEvent:
    return StatusEvent(seq=seq, id="task-1", status=TaskStatus(state=TaskState.COMPLETED), final=True)


class _ReadsPeer(Peer):
    """A peer whose stream is the reads given, each a list of items that arrived together."""

    uri = "test://reads"

    def __init__(self, reads: list[list[StreamItem]]) -> None:
        self.reads = reads
        self.canceled: list[str] = []

    async def send(self, params: TaskSendParams, on_sent: Any = None, on_task: Any = None) -> Task:
        raise NotImplementedError

    @asynccontextmanager
    async def subscribe(self, params: TaskSendParams) -> AsyncIterator[AsyncIterator[StreamRead]]:
        async def reads() -> AsyncGenerator[StreamRead, None]:
            for read in self.reads:
                yield read

        async with aclosing(reads()) as items:
            yield items

    async def cancel(self, task_id: str) -> bool:
        self.canceled.append(task_id)
        return True

    async def get(self, task_id: str) -> Task:
        raise NotImplementedError

    async def card(self) -> AgentCard:
        raise NotImplementedError


class _CountingLog(SQLiteEventLog):
    """The SQLite log, noting how many events each ``append_all`` was given; ``fail`` makes those fail."""

    def __init__(self, path: Path, *, fail: bool = False) -> None:
        super().__init__(path)
        self.batches: list[int] = []
        self.fail = fail

    async def append_all(self, events: Sequence[Event]) -> AsyncGenerator[Event, None]:
        self.batches.append(len(events))
        if self.fail:
            raise OSError("disk full")
        async with aclosing(super().append_all(events)) as stored:
            async for event in stored:
                yield event


def _call(peer: Peer, log: SQLiteEventLog, *, max_cost_usd: float | None = None) -> AgentCall:
    spec = CallSpec(
        agent=peer.uri,
        mode=Mode(kind="streaming"),
        timeout_s=10.0,
        idle_timeout_s=10.0,
        cancel_timeout_s=1.0,
        budget=Budget(max_cost_usd),
        tool="reads",
    )
    return AgentCall(lambda: peer, RunRecorder(log, "run-1"), spec, Message.user("go"), task_id="task-1")


@pytest.fixture
async def log(tmp_path: Path) -> AsyncIterator[_CountingLog]:
    log = _CountingLog(tmp_path / "events.db")
    try:
        yield log
    finally:
        await log.aclose()


async def test_the_lines_of_one_read_are_appended_in_one_commit_in_order(log: _CountingLog) -> None:
    working = StatusEvent(seq=0, id="task-1", status=TaskStatus(state=TaskState.WORKING))
    peer = _ReadsPeer(
        [[working, *(_artifact(seq, f"c{seq} ") for seq in range(1, 6))], [_artifact(6, "c6 "), _final(7)]]
    )
    result = await _call(peer, log).run()
    assert log.batches == [6], "the first read's six lines in one append_all; the second read's one line alone"
    events = await log.read("run-1")
    assert [event.seq for event in events] == list(range(len(events)))
    progress = [event.fields for event in events if event.type == "agent_tool_progress"]
    assert [fields["chunk_index"] for fields in progress] == list(range(7))
    assert [fields["kind"] for fields in progress] == ["status"] + ["artifact"] * 6
    assert "".join(fields.get("text", "") for fields in progress[1:]) == result.text == "c1 c2 c3 c4 c5 c6 "
    assert result.chunks == 7 and result.state == "completed"
    assert events[-1].type == "agent_tool_completed" and events[-1].fields["chunks"] == 7


async def test_a_line_over_the_budget_ends_the_call_after_the_lines_of_its_read_before_it(log: _CountingLog) -> None:
    read: list[StreamItem] = [_artifact(0, "a", 0.1), _artifact(1, "b", 0.1), _artifact(2, "c", 1.0), _artifact(3, "d")]
    peer = _ReadsPeer([read, [_final(4)]])
    with pytest.raises(BudgetExceeded) as caught:
        await _call(peer, log, max_cost_usd=0.5).run()
    partial = caught.value.partial
    assert partial is not None and partial.text == "ab" and partial.chunks == 2
    assert partial.cost_usd == pytest.approx(1.2), "the cost that crossed the budget is the call's"
    events = await log.read("run-1")
    assert [event.type for event in events] == [
        "agent_tool_invoked",
        "agent_tool_progress",
        "agent_tool_progress",
        "agent_tool_terminated",
    ]
    assert events[-1].fields["rejected_chunk"]["artifact"]["parts"][0]["text"] == "c"
    assert events[-1].fields["chunks"] == 2 and peer.canceled == ["task-1"]


async def test_a_read_whose_commit_fails_adds_none_of_its_lines_to_the_result(tmp_path: Path) -> None:
    log = _CountingLog(tmp_path / "events.db", fail=True)
    try:
        peer = _ReadsPeer([[_artifact(0, "a"), _artifact(1, "b")], [_final(2)]])
        with pytest.raises(OSError, match="disk full"):
            await _call(peer, log).run()
        events = await log.read("run-1")
    finally:
        await log.aclose()
    assert [event.type for event in events] == ["agent_tool_invoked", "agent_tool_error"]
    assert events[-1].fields["chunks"] == 0 and "text" not in events[-1].fields


class _Chunks:
    """A response body that arrives in the pieces given."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        for piece in self.pieces:
            yield piece


async def test_the_ndjson_peer_yields_the_lines_of_each_read_together_up_to_the_final_one() -> None:
    lines = [event.to_json() + b"\n" for event in (_artifact(0, "a"), _artifact(1, "b"), _artifact(2, "c"))]
    final = _final(3).to_json() + b"\n"
    body = _Chunks([lines[0] + lines[1] + lines[2][:5], lines[2][5:] + final + lines[0]])
    place = _Place(task_id=None)
    limits = PeerLimits()
    client = PeerHttpClient(limits)
    try:
        peer = A2AHttpPeer(A2AHttpTarget("http://127.0.0.1:9", "http://127.0.0.1:9"), client, limits)
        reads = [read async for read in peer._lines(body, place, ByteBudget(1 << 20))]  # type: ignore[arg-type]
    finally:
        await client.aclose()
    assert [[item.seq for item in items_of(read)] for read in reads] == [[0, 1], [2, 3]]  # type: ignore[union-attr]
    assert place.final and place.seq == 3, "nothing is read after the final line, even in the same read"


async def test_an_error_in_the_lines_is_raised_as_it_was(log: _CountingLog) -> None:
    failed = StatusEvent(seq=1, id="task-1", status=TaskStatus(state=TaskState.FAILED), final=True)
    with pytest.raises(AgentToolError) as caught:
        await _call(_ReadsPeer([[_artifact(0, "a"), failed]]), log).run()
    assert caught.value.reason == "task_failed"
    assert caught.value.partial is not None and caught.value.partial.text == "a" and caught.value.partial.chunks == 1


_KILLED_CHILD = textwrap.dedent(
    """
    import sys

    import anyio

    from agent_server import create_app
    from agent_server.testing import scripted_agent
    from gateway import Gateway, SQLiteEventLog
    from tests.support.servers import serve_app


    class ReportingLog(SQLiteEventLog):
        async def append_all(self, events):
            async for stored in super().append_all(events):
                print(stored.seq, len(events), flush=True)
                yield stored


    async def main(url):
        async with Gateway(ReportingLog(sys.argv[1])) as gateway:
            gateway.add_agent_tool("research", url, mode="streaming")
            await gateway.call_tool("research", "stream 100000 0 0", run_id="killed-run")


    with serve_app(create_app(scripted_agent())) as url:
        anyio.run(main, url)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_mid_stream_loses_no_event_a_batch_acknowledged(tmp_path: Path) -> None:
    """The chunks come back to back, so they are read, and committed, many at once."""
    path = tmp_path / "events.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_CHILD, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    reported: list[int] = []
    batches: set[int] = set()
    try:
        assert child.stdout is not None
        deadline = time.monotonic() + PROCESS_S
        while len(reported) < 500 and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            seq, batch = map(int, line.split())
            reported.append(seq)
            batches.add(batch)
        assert len(reported) >= 500, child.stderr.read().decode() if child.stderr else "child stopped early"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()

    async def read_back() -> list[Event]:
        log = SQLiteEventLog(path)
        try:
            return await log.read("killed-run")
        finally:
            await log.aclose()

    events = anyio.run(read_back)
    assert [event.seq for event in events] == list(range(len(events))), "no gaps, nothing torn"
    assert set(reported) <= {event.seq for event in events}, "every event acknowledged before the kill is in the file"
    assert max(batches) > 1, "lines were committed together"
    assert events[-1].type == "agent_tool_progress", "the stream really was cut mid-way"
