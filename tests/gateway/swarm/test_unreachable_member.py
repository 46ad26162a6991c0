"""A remote member that cannot be reached strands no session: the turn goes to the fallback, and a circuit opens.

The swarm: the offline triage agent (it hands off when a message names an agent) and the
remote ``weather`` agent on loopback. Once weather holds the session its server is stopped:
the next turns are taken by triage, saying why; after ``FAILURES_TO_OPEN`` failures weather
is not even called, and when its server is back on the same port a probe finds it again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from agent_server import HostedAgent, TaskContext, create_app
from gateway.service import RemoteSpec, create_gateway_app
from gateway.swarm.health import FAILURES_TO_OPEN
from tests.support.gateway_service import triage_service
from tests.support.servers import serve_app
from tests.support.waiting import wait_until


async def _weather(ctx: TaskContext) -> str:
    return "Sunny in Paris."


def _weather_app() -> Any:
    return create_app(HostedAgent("weather", _weather, description="Weather forecasts for any city."))


def _turn(http: httpx.Client, session: str, message: str) -> dict[str, Any]:
    answer = http.post(f"/sessions/{session}/messages", json={"message": message, "stream": False})
    assert answer.status_code == 200, answer.text
    return answer.json()


def _events(http: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    import orjson

    return [orjson.loads(line) for line in http.get(f"/runs/{run_id}/events").text.splitlines() if line]


@pytest.fixture
def swarm() -> Iterator[tuple[httpx.Client, ExitStack, int]]:
    with ExitStack() as stack:
        weather_url = stack.enter_context(serve_app(_weather_app()))
        port = int(weather_url.rsplit(":", 1)[1])
        weather = ExitStack()
        weather.push(stack.pop_all())
        service = triage_service(remotes=(RemoteSpec(weather_url, "weather", handoff_from=("triage",)),))
        with serve_app(create_gateway_app(service)) as url, httpx.Client(base_url=url, timeout=30) as http:
            try:
                yield http, weather, port
            finally:
                weather.close()


def test_a_turn_whose_agent_is_down_goes_to_the_starting_agent_and_the_session_moves_on(
    swarm: tuple[httpx.Client, ExitStack, int],
) -> None:
    http, weather, _ = swarm
    first = _turn(http, "s1", "weather in Paris?")
    assert first["active_agent_name"] == "weather" and "Sunny" in first["content"]
    weather.close()  # the agent's server is gone

    second = _turn(http, "s1", "and tomorrow?")
    assert second["active_agent_name"] == "triage", "the turn was answered, by the starting agent"
    changed = [e for e in _events(http, second["run_id"]) if e["type"] == "agent_changed"]
    assert changed[-1]["previous"] == "weather" and changed[-1]["cause"] == "unreachable"
    assert http.get("/sessions/s1").json()["active_agent"] == "triage"
    health = http.get("/agents/weather").json()["health"]
    assert health["state"] == "failing" and health["failures"] == 1 and "cannot reach" in health["last_error"]


def test_after_repeated_failures_the_circuit_opens_and_a_probe_closes_it_when_the_agent_is_back(
    swarm: tuple[httpx.Client, ExitStack, int],
) -> None:
    http, weather, port = swarm
    weather.close()
    for index in range(FAILURES_TO_OPEN + 1):
        answer = _turn(http, f"down-{index}", "weather in Paris?")  # triage hands off to weather, which is down
        assert answer["active_agent_name"] == "triage"
    health = http.get("/agents/weather").json()["health"]
    assert health["state"] == "open" and health["failures"] == FAILURES_TO_OPEN
    last = _events(http, answer["run_id"])
    assert any(e["type"] == "handoff" and "is not called" in (e.get("reason") or "") for e in last)

    with serve_app(_weather_app(), port=port):
        wait_until(
            lambda: http.get("/agents/weather").json()["health"]["retry_in_s"] == 0,
            "the circuit's open time to pass",
            timeout_s=60,
        )
        assert _turn(http, "back", "weather in Paris?")["active_agent_name"] == "weather", "the probe found it"
        assert http.get("/agents/weather").json()["health"]["state"] == "reachable"
