"""``switchboard call`` as a real subprocess against an agent server on loopback, and its terminal renderer."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from gateway.calls.result import AgentToolResult
from gateway.cli.main import main
from gateway.cli.progress import ProgressRenderer
from gateway.errors import BudgetExceeded
from gateway.recording.events import Event
from tests.support.gateway_service import agent_server
from tests.support.lockstep import Lockstep
from tests.support.waiting import PROCESS_S

ROOT = Path(__file__).resolve().parents[3]


def _call(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", "call", *args], cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_S
    )


def _events(stdout: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in stdout.splitlines()]


def test_sync_prints_the_calls_events_as_ndjson_when_piped(scripted_url: str) -> None:
    done = _call(scripted_url, "echo hello there", "--mode", "sync")
    assert done.returncode == 0, done.stderr
    events = _events(done.stdout)
    assert [e["type"] for e in events] == ["agent_tool_invoked", "agent_tool_completed"]
    assert events[0]["mode"] == "sync" and events[-1]["text"] == "hello there"
    assert [e["seq"] for e in events] == [0, 1] and done.stderr == ""


def test_streaming_lines_come_out_as_the_chunks_arrive() -> None:
    """The agent makes each chunk once the command has printed the line before it: flushed one by one, not at exit."""
    lockstep = Lockstep(chunks=5)
    with agent_server(lockstep.agent()) as url:
        process = subprocess.Popen(
            [sys.executable, "-m", "gateway", "call", url, "go", "--mode", "streaming"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            assert process.stdout is not None
            events = []
            for line in process.stdout:
                events.append(orjson.loads(line))
                if events[-1]["type"] == "agent_tool_invoked" or events[-1].get("kind") == "artifact":
                    lockstep.seen()
            assert process.wait(timeout=PROCESS_S) == 0, process.stderr.read() if process.stderr else ""
        finally:
            if process.poll() is None:
                process.kill()
            process.communicate()
    kinds = [event["type"] for event in events]
    assert kinds[0] == "agent_tool_invoked" and kinds[-1] == "agent_tool_completed"
    chunks = [e for e in events if e["type"] == "agent_tool_progress" and e.get("kind") == "artifact"]
    assert [e["accumulated_cost_usd"] for e in chunks] == pytest.approx([0.001, 0.002, 0.003, 0.004, 0.005])


def test_conversational_runs_turns_until_the_agent_completes(scripted_url: str) -> None:
    done = _call(scripted_url, "ask what is the order number?", "--mode", "conversational", "--max-turns", "3")
    assert done.returncode == 0, done.stderr
    events = _events(done.stdout)
    turns = [e for e in events if e["type"] == "agent_tool_progress"]
    assert [(t["turn"], t["state"]) for t in turns] == [(1, "input-required"), (2, "completed")]
    assert events[-1]["type"] == "agent_tool_completed" and events[-1]["turns"] == 2


def test_a_failed_call_exits_1_with_the_reason_on_stderr(scripted_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", scripted_url, "stream 5 0.01 0.001", "--mode", "streaming", "--budget", "0.0015"]) == 1
    out, err = capsys.readouterr()
    assert err.startswith("switchboard call: the call failed (budget_exceeded): cost $0.002000 exceeds")
    events = _events(out)
    assert events[-1]["type"] == "agent_tool_terminated" and events[-1]["cancel_sent"] is True
    assert main(["call", scripted_url, "sleep 5", "--mode", "streaming", "--idle-timeout", "0.3"]) == 1
    assert "(idle_timeout): no data from" in capsys.readouterr().err
    assert main(["call", "http://127.0.0.1:1", "hi"]) == 1
    assert "(connection_error)" in capsys.readouterr().err


def test_usage_mistakes_exit_2_and_say_what_is_wrong(scripted_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["call", "ftp://nowhere", "hi"]) == 2
    assert "switchboard call: error: invalid agent URI 'ftp://nowhere'" in capsys.readouterr().err
    assert main(["call", scripted_url, "hi", "--max-turns", "2"]) == 2
    assert "--max-turns applies to --mode conversational only" in capsys.readouterr().err


def test_a_failed_call_says_so_once_on_stderr(scripted_url: str) -> None:
    done = _call("http://127.0.0.1:1", "hi")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [done.stderr.strip()], done.stderr
    assert done.stderr.startswith("switchboard call: the call failed (connection_error)")
    verbose = _call("http://127.0.0.1:1", "hi", "-v")
    assert "gateway.events" in verbose.stderr and verbose.stderr.count("switchboard call: the call failed") == 1


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--budget", "abc", "argument --budget: must be a number >= 0, got 'abc'"),
        ("--idle-timeout", "abc", "argument --idle-timeout: must be a positive number, got 'abc'"),
        ("--idle-timeout", "nan", "argument --idle-timeout: must be a positive number, got 'nan'"),
        ("--timeout-ms", "1.5", "argument --timeout-ms: must be a positive integer, got '1.5'"),
    ],
)
def test_a_bad_number_says_what_was_expected(
    scripted_url: str, capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["call", scripted_url, "hi", option, value])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def _progress(index: int, cost: float) -> Event:
    return Event.create("agent_tool_progress", "run_1", chunk_index=index, accumulated_cost_usd=cost, kind="artifact")


def test_the_terminal_renderer_rewrites_one_progress_line_then_prints_the_answer() -> None:
    out = io.StringIO()
    renderer = ProgressRenderer(out, "http://agent", "streaming")
    renderer.event(Event.create("agent_tool_invoked", "run_1"))
    for index in range(3):
        renderer.event(_progress(index, 0.001 * (index + 1)))
    assert renderer.line().startswith("\\ streaming http://agent · 3 chunks · $0.0030 · ")
    result = AgentToolResult(
        "c",
        "call",
        "http://agent",
        "streaming",
        "run_1",
        state="completed",
        text="the answer",
        chunks=3,
        cost_usd=0.003,
    )
    renderer.finish(result, None)
    text = out.getvalue()
    assert text.count("\r\x1b[2K") == 5  # four redraws, one clear before the answer
    assert "\n" not in text.split("the answer")[0]  # the progress stayed on one line
    assert text.endswith("\r\x1b[2Kthe answer\n[completed · 3 chunks · $0.0030 · " + text.rsplit(" · ", 1)[1])


def test_the_terminal_renderer_shows_what_arrived_before_a_failure() -> None:
    out = io.StringIO()
    renderer = ProgressRenderer(out, "http://agent", "streaming")
    renderer.event(_progress(0, 0.002))
    error = BudgetExceeded(0.004, 0.003)
    error.partial = AgentToolResult(
        "c", "call", "http://agent", "streaming", "run_1", text="partial ", chunks=1, cost_usd=0.004
    )
    renderer.finish(None, error)
    assert "partial \n[budget_exceeded · 1 chunks · $0.0040 · " in out.getvalue()


def test_an_mcp_stdio_command_written_with_its_arguments_is_told_about_args() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "call", "mcp+stdio:python examples/mcp_weather_server.py#forecast", "Paris"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
    )
    assert done.returncode == 1
    assert "arguments go in the query" in done.stderr
    assert "mcp+stdio:python?args=examples/mcp_weather_server.py#forecast" in done.stderr
