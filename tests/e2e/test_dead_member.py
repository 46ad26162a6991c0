"""A remote member that cannot be reached strands no session: the turn goes to the fallback, and a circuit opens.

The swarm: the offline triage agent (it hands off when a message names an agent) and the
remote ``weather`` agent, a ``switchboard serve`` process on loopback. Once weather holds the
session its process is killed (SIGKILL): the next turns are taken by triage, saying why;
after ``FAILURES_TO_OPEN`` failures weather is not even called, and when a new process serves
it on the same port a probe finds it again.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from agent_server.http.loopback import free_port
from gateway.service import RemoteSpec, create_gateway_app
from gateway.swarm.health import FAILURES_TO_OPEN
from tests.support.gateway_service import triage_service
from tests.support.processes import stop_process
from tests.support.servers import serve_app
from tests.support.waiting import PROCESS_S, wait_until

WEATHER = """
from agent_server import HostedAgent, TaskContext


async def weather(ctx: TaskContext) -> str:
    return "Sunny in Paris."


agent = HostedAgent("weather", weather, description="Weather forecasts for any city.")
"""


@contextmanager
def weather_process(tmp_path: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """``switchboard serve`` of the weather agent on ``port``, once its card answers; stopped after the block."""
    source = tmp_path / "weather_agent.py"
    source.write_text(WEATHER, encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "gateway",
        "serve",
        f"{source}:agent",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: _answers(port) or process.poll() is not None, "the weather agent to serve", PROCESS_S)
        assert process.poll() is None, "the weather agent exited"
        yield process
    finally:
        stop_process(process)


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/.well-known/agent-card.json", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def _turn(http: httpx.Client, session: str, message: str) -> dict[str, Any]:
    answer = http.post(f"/sessions/{session}/messages", json={"message": message, "stream": False})
    assert answer.status_code == 200, answer.text
    return answer.json()


def _events(http: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in http.get(f"/runs/{run_id}/events").text.splitlines() if line]


@pytest.fixture
def swarm(tmp_path: Path) -> Iterator[tuple[httpx.Client, subprocess.Popen[bytes], int]]:
    """The gateway and its weather agent's process (the test kills it), and that agent's port."""
    port = free_port()
    with weather_process(tmp_path, port) as weather:
        spec = RemoteSpec(f"http://127.0.0.1:{port}", "weather", handoff_from=("triage",))
        with serve_app(create_gateway_app(triage_service(remotes=(spec,)))) as url:
            with httpx.Client(base_url=url, timeout=30) as http:
                yield http, weather, port


def _killed(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.wait(PROCESS_S)


def test_a_turn_whose_agent_is_down_goes_to_the_starting_agent_and_the_session_moves_on(
    swarm: tuple[httpx.Client, subprocess.Popen[bytes], int],
) -> None:
    http, weather, _ = swarm
    first = _turn(http, "s1", "weather in Paris?")
    assert first["active_agent_name"] == "weather" and "Sunny" in first["content"]
    _killed(weather)

    second = _turn(http, "s1", "and tomorrow?")
    assert second["active_agent_name"] == "triage", "the turn was answered, by the starting agent"
    changed = [e for e in _events(http, second["run_id"]) if e["type"] == "agent_changed"]
    assert changed[-1]["previous"] == "weather" and changed[-1]["cause"] == "unreachable"
    assert http.get("/sessions/s1").json()["active_agent"] == "triage"
    health = http.get("/agents/weather").json()["health"]
    assert health["state"] == "failing" and health["failures"] == 1 and "cannot reach" in health["last_error"]


def test_after_repeated_failures_the_circuit_opens_and_a_probe_closes_it_when_the_agent_is_back(
    swarm: tuple[httpx.Client, subprocess.Popen[bytes], int], tmp_path: Path
) -> None:
    http, weather, port = swarm
    _killed(weather)
    for index in range(FAILURES_TO_OPEN + 1):
        answer = _turn(http, f"down-{index}", "weather in Paris?")  # triage hands off to weather, which is down
        assert answer["active_agent_name"] == "triage"
    health = http.get("/agents/weather").json()["health"]
    assert health["state"] == "open" and health["failures"] == FAILURES_TO_OPEN
    last = _events(http, answer["run_id"])
    assert any(e["type"] == "handoff" and "is not called" in (e.get("reason") or "") for e in last)

    with weather_process(tmp_path, port):
        wait_until(
            lambda: http.get("/agents/weather").json()["health"]["retry_in_s"] == 0,
            "the circuit's open time to pass",
            timeout_s=60,
        )
        assert _turn(http, "back", "weather in Paris?")["active_agent_name"] == "weather", "the probe found it"
        assert http.get("/agents/weather").json()["health"]["state"] == "reachable"
