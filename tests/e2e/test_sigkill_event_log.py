"""A gateway process killed with SIGKILL mid-stream leaves every event it had appended readable,
and the next process to own the log closes the run it left open, so followers end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from gateway.event_log import SQLiteEventLog
from gateway.event_log.base import INTERRUPTED
from gateway.recording.events import Event, EventType
from gateway.service import GatewayService
from tests.support.waiting import PROCESS_S, until

ROOT = Path(__file__).resolve().parents[2]

_CHILD = textwrap.dedent(
    """
    import sys

    import anyio

    from agent_server import create_app
    from agent_server.testing import scripted_agent
    from gateway import Gateway, SQLiteEventLog
    from tests.support.servers import serve_app


    class ReportingLog(SQLiteEventLog):
        async def append(self, event):
            stored = await super().append(event)
            print(stored.run_id, stored.seq, flush=True)
            return stored


    async def main(url):
        log = ReportingLog(sys.argv[1])
        async with Gateway(log) as gateway:
            gateway.add_agent_tool("research", url, mode="streaming")
            await gateway.call_tool("research", "stream 100000 0.002 0.0001", run_id="killed-run")


    with serve_app(create_app(scripted_agent())) as url:
        anyio.run(main, url)
    """
)


def _kill_mid_stream(path: Path, *, events: int = 30) -> list[int]:
    """Run the child until it has appended ``events`` events, SIGKILL it; returns the seqs it reported."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT
    )
    reported: list[int] = []
    try:
        assert child.stdout is not None
        deadline = time.monotonic() + PROCESS_S
        while len(reported) < events and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            run_id, seq = line.decode().split()
            assert run_id == "killed-run"
            reported.append(int(seq))
        assert len(reported) >= events, child.stderr.read().decode() if child.stderr else "child stopped early"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        assert child.returncode == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return reported


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_mid_stream_loses_no_appended_event(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    reported = _kill_mid_stream(path)

    async def read_back() -> list[tuple[int, str]]:
        log = SQLiteEventLog(path)
        try:
            return [(event.seq, event.type) for event in await log.read("killed-run")]
        finally:
            await log.aclose()

    events = anyio.run(read_back)
    seqs = [seq for seq, _ in events]
    assert seqs == list(range(len(events))), "no gaps, nothing torn"
    assert set(reported) <= set(seqs), "every append that returned before the kill is in the file"
    assert events[0][1] == "agent_tool_invoked"
    assert all(kind == "agent_tool_progress" for _, kind in events[1:])
    assert not any(kind == "agent_tool_completed" for _, kind in events), "the stream really was cut mid-way"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_a_run_cut_off_by_a_kill_is_closed_by_the_next_log_and_its_follower_ends(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    _kill_mid_stream(path, events=5)

    async def reopen() -> None:
        log = SQLiteEventLog(path, cross_process_poll_s=30)
        try:
            assert not await log.is_closed("killed-run")
            followed: list[str] = []

            async def follow() -> None:
                async for event in log.follow("killed-run"):
                    followed.append(event.type)

            stored = len(await log.read("killed-run"))
            with anyio.fail_after(10):
                async with anyio.create_task_group() as task_group:
                    task_group.start_soon(follow)
                    await until(lambda: len(followed) == stored, "the follower to catch up and wait for more")
                    assert await log.close_abandoned_runs() == ["killed-run"]
            assert followed[-1] == "run_failed" and followed[0] == "agent_tool_invoked"
            last = (await log.read("killed-run"))[-1]
            assert last.fields["error"] == INTERRUPTED and await log.is_closed("killed-run")
            assert await log.close_abandoned_runs() == [], "closed once"
        finally:
            await log.aclose()

    anyio.run(reopen)


def test_the_gateway_service_closes_abandoned_runs_when_it_starts(tmp_path: Path) -> None:
    path = tmp_path / "events.db"

    async def scenario() -> None:
        left_open = SQLiteEventLog(path)
        await left_open.append(Event.create(EventType.RUN_STARTED, "stopped-run"))
        await left_open.append(Event.create(EventType.RUN_STARTED, "finished-run"))
        await left_open.close_run("finished-run")
        await left_open.aclose()
        async with GatewayService(event_log=SQLiteEventLog(path)) as service:
            assert await service.event_log.is_closed("stopped-run")
            assert [e.type for e in await service.event_log.read("stopped-run")] == ["run_started", "run_failed"]
            assert [e.type for e in await service.event_log.read("finished-run")] == ["run_started"]

    anyio.run(scenario)
