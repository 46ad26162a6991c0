"""A turn outlives its gateway: killed with SIGKILL mid-turn, the gateway restarted on its SQLite files carries it on.

`switchboard gateway` runs as a process on SQLite stores; its starting agent is a remote
scripted agent (another server, here in the test's process, whose ``Probe`` counts how often
its code began) that streams slowly. The process is killed as the answer streams and
started again on the same data: the turn is resumed (``run_resumed``), the remote task is
followed again by its id and never sent twice, a follower reads one run without a gap, the
session has the message and the whole answer, and the next message works. When the remote
task is gone too (the agent server restarted meanwhile), the turn fails saying so and the
session keeps the message.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx
import orjson

from agent_server import create_app
from agent_server.http.loopback import free_port
from agent_server.testing import Probe, scripted_agent
from tests.support.gateway_process import gateway_process, remote_first_config
from tests.support.gateway_service import agent_server, client, lines_of, wait_for_health
from tests.support.sdk_agents import serve_sdk_agent
from tests.support.servers import serve_app
from tests.support.waiting import PROCESS_S

CHUNKS = 120
ASK = f"stream {CHUNKS} 0.05 0"
ANSWER = "".join(f"chunk-{index} " for index in range(CHUNKS))


def _killed_mid_answer(url: str, process: Any, ask: str = ASK) -> str:
    """Post the slow message, read until the answer streams, kill the gateway; the run's id."""
    with client(url) as http, http.stream("POST", "/sessions/s1/messages", json={"message": ask}) as response:
        run_id = response.headers["x-run-id"]
        deltas = 0
        for line in response.iter_lines():
            if line and orjson.loads(line)["type"] == "text_delta":
                deltas += 1
                if deltas == 3:
                    break
        process.kill()
    assert process.wait(10) == -9
    return run_id


def _followed(url: str, run_id: str) -> list[dict[str, Any]]:
    """The run's events, followed to its end through the restarted gateway."""
    with httpx.Client(base_url=url, timeout=PROCESS_S) as http:
        return lines_of(http.get(f"/runs/{run_id}/events", params={"follow": "1"}))


def test_a_turn_killed_mid_answer_is_resumed_at_restart_and_the_agent_ran_once(tmp_path: Path) -> None:
    probe = Probe()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with agent_server(scripted_agent("scripted", probe=probe)) as agent_url:
        config = remote_first_config(tmp_path, port, agent_url)
        with gateway_process(config) as first:
            wait_for_health(url, first)
            run_id = _killed_mid_answer(url, first)

        with gateway_process(config) as second, client(url) as http:
            wait_for_health(url, second)
            events = _followed(url, run_id)
            assert [e["seq"] for e in events] == list(range(len(events))), "one run, no gap, no duplicate"
            resumed = [e for e in events if e["type"] == "run_resumed"]
            assert len(resumed) == 1 and resumed[0]["step"] == "reattached"
            assert resumed[0]["after_seq"] == resumed[0]["seq"] - 1
            invoked = [e for e in events if e["type"] == "agent_tool_invoked"]
            assert len(invoked) == 1, "the remote task was never sent a second time"
            assert resumed[0]["task_id"] == invoked[0]["task_id"]
            assert events[-1]["type"] == "run_completed" and events[-1]["content"] == ANSWER
            assert "".join(e["text"] for e in events if e["type"] == "text_delta") == ANSWER
            assert probe.starts(invoked[0]["task_id"]) == 1

            session = http.get("/sessions/s1").json()
            assert session["history"][0] == {"role": "user", "content": ASK}
            assert session["history"][-1]["content"] == ANSWER and session["open_run"] is None

            again = lines_of(http.post("/sessions/s1/messages", json={"message": "echo hello again"}))
            assert again[0]["type"] == "run_started" and again[0]["interrupted_run"] is None
            assert again[-1]["type"] == "run_completed" and again[-1]["content"] == "hello again"


def test_a_turn_whose_remote_task_is_gone_too_fails_saying_so_and_the_session_keeps_the_message(
    tmp_path: Path,
) -> None:
    port, agent_port = free_port(), free_port()
    url = f"http://127.0.0.1:{port}"
    agent_url = f"http://127.0.0.1:{agent_port}"
    config = remote_first_config(tmp_path, port, agent_url)
    with agent_server_at(agent_port):
        with gateway_process(config) as first:
            wait_for_health(url, first)
            run_id = _killed_mid_answer(url, first)
    with agent_server_at(agent_port), gateway_process(config) as second, client(url) as http:  # its tasks are gone
        wait_for_health(url, second)
        events = _followed(url, run_id)
        assert [e["seq"] for e in events] == list(range(len(events)))
        assert [e["type"] for e in events][-2:] == ["agent_tool_error", "run_failed"]
        assert events[-2]["status"] == 404 and "not found" in events[-1]["error"]
        session = http.get("/sessions/s1").json()
        assert session["history"] == [{"role": "user", "content": ASK}] and session["open_run"] is None

        again = lines_of(http.post("/sessions/s1/messages", json={"message": "echo hello again"}))
        assert again[-1]["type"] == "run_completed" and again[-1]["content"] == "hello again"


def agent_server_at(port: int) -> AbstractContextManager[str]:
    """The scripted agent server on ``port``: a second one there is a restart that lost every task."""
    return serve_app(create_app(scripted_agent("scripted")), port=port)


def test_a_turn_whose_standard_a2a_agent_was_streaming_is_resumed_by_subscribing_to_its_task(tmp_path: Path) -> None:
    """The same over JSON-RPC (the a2a-sdk's server): the task is named by the server, followed again with
    SubscribeToTask, whose opening snapshot is read against what the log holds: nothing passed on twice."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    chunks = 60
    with serve_sdk_agent() as (agent_url, executor):
        config = remote_first_config(tmp_path, port, agent_url)
        with gateway_process(config) as first:
            wait_for_health(url, first)
            run_id = _killed_mid_answer(url, first, f"stream {chunks} 0.05 0")

        with gateway_process(config) as second:
            wait_for_health(url, second)
            events = _followed(url, run_id)
    assert [e["seq"] for e in events] == list(range(len(events))), "one run, no gap, no duplicate"
    resumed = [e for e in events if e["type"] == "run_resumed"]
    assert len(resumed) == 1 and resumed[0]["step"] == "reattached"
    assert len([e for e in events if e["type"] == "agent_tool_invoked"]) == 1
    answer = "".join(f"chunk-{index} " for index in range(chunks))
    assert events[-1]["type"] == "run_completed" and events[-1]["content"] == answer
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == answer
    assert len(executor.message_ids) == 1, "the agent was sent the message once"
