"""The gateway service's start and stop: remote agents that come up late, runs still going at shutdown."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import orjson
import pytest

from agent_server import HostedAgent, TaskContext, create_app
from agent_server.http.loopback import free_port
from agent_server.testing import scripted_agent
from gateway.config.load import load_config
from gateway.service import AgentUnreachable, create_gateway_app
from tests.support.gateway_service import client, lines_of, remote_first_service, wait_for_health
from tests.support.servers import serve_app
from tests.support.waiting import PROCESS_S, wait_until

ROOT = Path(__file__).resolve().parents[3]


def _serve_later(port: int, delay_s: float, stop: threading.Event) -> threading.Thread:
    """An agent server that starts on ``port`` after ``delay_s`` and runs until ``stop`` is set."""

    def run() -> None:
        time.sleep(delay_s)
        with serve_app(create_app(scripted_agent("late")), port=port):
            stop.wait(30)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.anyio
async def test_a_remote_agent_that_starts_later_is_waited_for(caplog: pytest.LogCaptureFixture) -> None:
    port, stop = free_port(), threading.Event()
    thread = _serve_later(port, 0.8, stop)
    try:
        started = anyio.current_time()
        async with remote_first_service(f"http://127.0.0.1:{port}", "late", startup_wait_s=30) as service:
            assert service.starting_agent.name == "late"
        assert 0.7 <= anyio.current_time() - started < 15, "waited until the agent came up, not for all 30 s"
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()
    retries = [r.getMessage() for r in caplog.records if "not reachable yet" in r.getMessage()]
    assert retries and retries[0].startswith(f"remote agent http://127.0.0.1:{port} not reachable yet (attempt 1: ")


@pytest.mark.anyio
async def test_the_wait_is_bounded_and_the_failure_says_how_long_it_tried() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    started = anyio.current_time()
    with pytest.raises(AgentUnreachable) as caught:
        async with remote_first_service(url, startup_wait_s=0.6):
            pass
    assert 0.5 <= anyio.current_time() - started < 10
    assert caught.value.message.startswith(f"cannot fetch the agent card from {url}: cannot reach")
    assert caught.value.message.endswith("over 0.6 s)")


@pytest.mark.anyio
async def test_an_answer_that_is_not_an_agent_is_not_waited_for(
    caplog: pytest.LogCaptureFixture, scripted_url: str
) -> None:
    with pytest.raises(AgentUnreachable) as caught:
        async with remote_first_service(scripted_url + "/not-here", startup_wait_s=10):
            pass
    assert caught.value.data["status"] == 404
    assert "tried" not in caught.value.message and not [
        r for r in caplog.records if "not reachable yet" in r.getMessage()
    ]


@contextmanager
def _gateway_process(tmp_path: Path, agent_url: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`switchboard gateway` in a subprocess, the agent at ``agent_url`` as remote agent and tool; killed if left on."""
    port = free_port()
    config = tmp_path / "gateway.toml"
    config.write_text(
        f'[gateway]\nport = {port}\n\n[stores]\nsessions = "memory"\nevents = "memory"\n\n'
        f'[[agents]]\nname = "slow"\nurl = "{agent_url}"\n\n'
        f'[[tools]]\nname = "slow_tool"\nagent = "{agent_url}"\n',
        encoding="utf-8",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway", "gateway", "--config", str(config)],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, process)
        yield url, process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def _tool_run_started(url: str, tool: str) -> bool:
    """Whether GET /runs lists a run of ``tool`` that has written its first event (the call reached the gateway)."""
    runs = httpx.get(f"{url}/runs", timeout=5).json()["runs"]
    return any(run["tool"] == tool and run["first_event"] for run in runs)


def test_sigterm_ends_the_runs_going_so_their_streams_end_and_nothing_is_cut(tmp_path: Path, scripted_url: str) -> None:
    with _gateway_process(tmp_path, scripted_url) as (url, process):
        sync_answer: list[httpx.Response | httpx.HTTPError] = []

        def call() -> None:
            try:
                sync_answer.append(httpx.post(f"{url}/tools/slow_tool/call", json={"input": "sleep 30"}, timeout=20))
            except httpx.HTTPError as exc:
                sync_answer.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        try:
            wait_until(lambda: _tool_run_started(url, "slow_tool"), "the sync tool call's run in GET /runs")
            with (
                client(url) as http,
                http.stream("POST", "/sessions/going/messages", json={"message": "stream 100 0.1"}) as response,
            ):
                lines = response.iter_lines()
                first = orjson.loads(next(lines))
                process.send_signal(signal.SIGTERM)
                rest = [orjson.loads(line) for line in lines if line]
        finally:
            caller.join(20)
        _, stderr = process.communicate(timeout=PROCESS_S)
    assert not caller.is_alive()
    assert first["type"] == "run_started"
    # A final line at all says the stream was ended by the gateway, not cut by uvicorn's graceful timeout.
    assert rest[-1]["type"] == "run_failed" and rest[-1]["error"] == "cancelled: the gateway is shutting down"
    [answer] = sync_answer
    assert isinstance(answer, httpx.Response) and answer.status_code == 502, answer
    error = answer.json()["error"]
    assert error["data"]["reason"] == "cancelled" and "shutting down" in error["message"] and error["data"]["run_id"]
    assert process.returncode == 0 and "Traceback" not in stderr, stderr


def test_sigterm_ends_the_tasks_of_the_gateways_own_binding_canceled_with_a_final_line(
    tmp_path: Path, scripted_url: str
) -> None:
    body = {"message": {"role": "user", "parts": [{"type": "text", "text": "stream 100 0.1"}]}}
    with _gateway_process(tmp_path, scripted_url) as (url, process):
        with client(url) as http, http.stream("POST", "/tasks/sendSubscribe", json=body) as response:
            lines = response.iter_lines()
            first = orjson.loads(next(lines))
            process.send_signal(signal.SIGTERM)
            rest = [orjson.loads(line) for line in lines if line]
        _, stderr = process.communicate(timeout=PROCESS_S)
    assert first["type"] == "status" and first["status"]["state"] == "working"
    final = rest[-1]
    # A final line at all says the stream was ended by the gateway, not cut by uvicorn's graceful timeout.
    assert final["final"] is True and final["status"]["state"] == "canceled", rest[-3:]
    assert process.returncode == 0 and "Traceback" not in stderr, stderr


def _echo() -> HostedAgent:
    async def echo(ctx: TaskContext) -> str:
        return ctx.text

    return HostedAgent("echo", echo, description="Repeats the text of the message it receives.")


@pytest.mark.parametrize("registry", ["memory", "sqlite"])
def test_after_a_restart_a_session_held_by_an_agent_no_longer_registered_goes_back_to_the_starting_agent(
    tmp_path: Path, registry: str
) -> None:
    """docs/gateway-service.md: with a memory registry, agents added through the API are lost at a restart, and
    their sessions go back; with the default (the sessions' SQLite file) the agent is back and keeps its session.

    Even where the gateway may still connect to the agent's host (here ``allowed_agent_hosts``): it is not
    connected again by the URL the session stored, since nobody registered it in this process.
    """
    config = tmp_path / "gw.toml"
    config.write_text(
        f'[gateway]\ndata_dir = "{tmp_path}"\n[stores]\nsessions = "sqlite"\nevents = "sqlite"\n'
        f'registry = "{registry}"\n[security]\nallowed_agent_hosts = ["127.0.0.1"]\n'
    )
    with serve_app(create_app(_echo())) as echo_url:
        with serve_app(create_gateway_app(load_config(config))) as url:
            assert httpx.post(f"{url}/agents", json={"url": echo_url}, timeout=10).status_code == 201
            first = lines_of(
                httpx.post(f"{url}/sessions/r1/messages", json={"message": "please echo this"}, timeout=30)
            )
            assert first[-1]["active_agent_name"] == "echo"
        with serve_app(create_gateway_app(load_config(config))) as url:
            again = lines_of(httpx.post(f"{url}/sessions/r1/messages", json={"message": "hello"}, timeout=30))
            listed = [agent["name"] for agent in httpx.get(f"{url}/agents", timeout=10).json()["agents"]]
    changed = [e for e in again if e["type"] == "agent_changed"]
    if registry == "sqlite":
        assert "echo" in listed and not changed
        assert again[-1]["type"] == "run_completed" and again[-1]["active_agent_name"] == "echo"
        assert again[-1]["content"] == "hello"
        return
    assert "echo" not in listed
    assert changed and changed[0]["previous"] == "echo" and changed[0]["agent"] == "assistant"
    assert changed[0]["cause"] == "not_registered"
    assert again[-1]["type"] == "run_completed" and again[-1]["active_agent_name"] == "assistant"
    docs = " ".join((ROOT / "docs" / "gateway-service.md").read_text().split())
    assert "a session whose active agent is gone after a restart goes back to the starting agent" in docs
