"""A gateway process killed with SIGKILL mid-stream leaves every event it had appended readable."""

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

ROOT = Path(__file__).resolve().parents[1]

_CHILD = textwrap.dedent(
    """
    import sys

    import anyio

    from agent_server import create_app
    from agent_server.testing import scripted_agent
    from gateway import Gateway, SQLiteEventLog
    from servers import serve_app


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


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_mid_stream_loses_no_appended_event(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)])}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT
    )
    reported: list[int] = []
    try:
        assert child.stdout is not None
        deadline = time.monotonic() + 20
        while len(reported) < 30 and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            run_id, seq = line.decode().split()
            assert run_id == "killed-run"
            reported.append(int(seq))
        assert len(reported) >= 30, child.stderr.read().decode() if child.stderr else "child stopped early"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        assert child.returncode == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()

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
