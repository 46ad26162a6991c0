"""`make demo` end to end: real agent services and a gateway as processes on loopback."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from examples.demo import run_demo
from tests.support.waiting import PROCESS_S, wait_until

ROOT = Path(__file__).resolve().parents[2]
_SERVICE_LINE = re.compile(r"^  (\S+)\s+(http://127\.0\.0\.1:\d+)\s+\(pid (\d+)\)$", re.M)


def _running(pid: str) -> bool:
    """Whether the process is still there (by pid: a port the demo freed may be taken by anyone at once)."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    return True


def test_the_demo_scenario_passes_every_step_and_stops_every_service() -> None:
    out = io.StringIO()
    steps = run_demo(out)
    by_title = {s.title.split(". ", 1)[1]: s for s in steps}
    assert all(s.passed for s in steps), out.getvalue()

    local_to_remote = by_title["local-to-remote handoff"].events
    assert [(e["source"], e["target"]) for e in local_to_remote if e["type"] == "handoff"] == [("triage", "billing")]
    remote_to_remote = by_title["remote-to-remote handoff"].events
    assert [(e["source"], e["target"]) for e in remote_to_remote if e["type"] == "handoff"] == [("billing", "tech")]
    assert remote_to_remote[-1]["type"] == "run_completed" and remote_to_remote[-1]["active_agent_name"] == "tech"

    for title, reason in (("budget cutoff", "budget_exceeded"), ("idle timeout", "idle_timeout")):
        ending = by_title[title].events[-1]
        assert ending["type"] == "agent_tool_terminated"
        assert ending["reason"] == reason
        assert ending["cancel_sent"] is True and ending["cancel_acknowledged"] is True
    budget = by_title["budget cutoff"].events
    assert budget[-1]["accumulated_cost_usd"] > 0.004
    assert all(e["accumulated_cost_usd"] <= 0.004 for e in budget if e["type"] == "agent_tool_progress")

    conversational = by_title["agent-as-tool, conversational"].events
    assert [e["turn"] for e in conversational if e["type"] == "agent_tool_progress"] == [1, 2, 3]

    last_turn = by_title["remote-to-remote handoff"].events[0]["run_id"]
    gateway_url = next(url for name, url, _ in _SERVICE_LINE.findall(out.getvalue()) if name == "gateway")
    assert gateway_url and last_turn
    assert out.getvalue().splitlines()[-1].startswith("every service is stopped; `make demo ARGS=--keep` keeps")

    services = _SERVICE_LINE.findall(out.getvalue())
    assert {name for name, _, _ in services} == {
        "billing",
        "tech",
        "editor",
        "researcher",
        "slow_researcher",
        "gateway",
    }
    assert not any(_running(pid) for _, _, pid in services)


_WITH_CTRL_C = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)
"""Run a module with Ctrl-C raising KeyboardInterrupt, as in a terminal, even when this test runs where SIGINT
is ignored (a shell's background job), which a child would inherit."""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_ctrl_c_kill_or_kill_9_stops_every_process_the_demo_started(stop: signal.Signals) -> None:
    demo = subprocess.Popen(
        [sys.executable, "-c", _WITH_CTRL_C, "examples.demo"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert demo.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + PROCESS_S
    while time.monotonic() < deadline:
        line = demo.stdout.readline()
        seen.append(line)
        if line.startswith("ready in") or not line:
            break
    services = _SERVICE_LINE.findall("".join(seen))
    assert len(services) == 6, "".join(seen)
    logs = Path(re.findall(r"logs in (\S+)", "".join(seen))[0])
    demo.send_signal(stop)
    rest, _ = demo.communicate(timeout=PROCESS_S)
    if stop is signal.SIGKILL:  # no cleanup runs in the demo: its services stop with it all the same
        assert demo.returncode == -9
        wait_until(lambda: not any(_running(pid) for _, _, pid in services), "the services to stop", PROCESS_S)
        return
    assert demo.returncode == 130, rest
    assert "interrupted" in rest
    assert not any(_running(pid) for _, _, pid in services)
    assert not logs.exists(), "the demo's files are removed"


def test_a_step_whose_events_are_not_what_it_expects_is_failed_not_a_traceback() -> None:
    from examples.demo import Demo, Step, _active, _content

    out = io.StringIO()
    demo = Demo("http://127.0.0.1:1", out)
    failed_run = [{"type": "run_started"}, {"type": "run_failed", "error": "boom"}]
    for check in (_active, _content, lambda events: events[0]["missing"], lambda events: 1 / 0):
        step = Step("a step", events=list(failed_run))
        demo._finish(step, check)
        assert step.passed is False and step.detail.startswith("unexpected events: ")
    assert "no run_completed event (events: run_started, run_failed)" in out.getvalue()
    assert out.getvalue().count("FAILED") == 4


@pytest.mark.timeout(300)
def test_keep_leaves_the_console_up_until_ctrl_c() -> None:
    demo = subprocess.Popen(
        [sys.executable, "-c", _WITH_CTRL_C, "examples.demo", "--keep"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert demo.stdout is not None
        seen: list[str] = []
        deadline = time.monotonic() + PROCESS_S
        while time.monotonic() < deadline and not (seen and seen[-1].startswith("the services stay up")):
            line = demo.stdout.readline()
            if not line:
                break
            seen.append(line)
        console = next((line.split(" ", 1)[1].strip() for line in seen if line.startswith("console: ")), None)
        assert console is not None, "".join(seen)
        base, run = console.split("/ui/#/runs/")
        assert httpx.get(f"{base}/ui", timeout=10).status_code == 200
        events = httpx.get(f"{base}/runs/{run}/events", timeout=10).text.splitlines()
        assert any('"type":"handoff"' in line for line in events)
        services = _SERVICE_LINE.findall("".join(seen))
        assert all(_running(pid) for _, _, pid in services), "--keep keeps every service up"
        demo.send_signal(signal.SIGINT)
        rest, _ = demo.communicate(timeout=PROCESS_S)
        assert demo.returncode == 130, rest
        assert not any(_running(pid) for _, _, pid in services)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.communicate()
