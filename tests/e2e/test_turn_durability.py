"""A turn is in the session from its first moment: a gateway killed with SIGKILL mid-turn loses nothing said.

`switchboard gateway` runs as a process on SQLite stores; its starting agent is a remote
scripted agent that streams slowly. The process is killed as the answer streams, started
again on the same data, and the session shows the message and that its turn was
interrupted; the next message works.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from agent_server.http.loopback import free_port
from tests.support.gateway_service import agent_server, client, lines_of, wait_for_health

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def _gateway(config: Path) -> Iterator[subprocess.Popen[str]]:
    """`switchboard gateway --config CONFIG` as a process; killed if the test leaves it running."""
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway", "gateway", "--config", str(config)],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def test_a_turn_killed_mid_answer_leaves_the_message_and_the_mark_and_the_next_turn_works(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with agent_server() as agent_url:
        config = tmp_path / "gateway.toml"
        config.write_text(
            f'[gateway]\nport = {port}\ndata_dir = "{tmp_path / "data"}"\n\n[swarm]\nstarting_agent = "slow"\n\n'
            f'[[agents]]\nname = "slow"\nurl = "{agent_url}"\n',
            encoding="utf-8",
        )
        with _gateway(config) as first:
            wait_for_health(url, first)
            with (
                client(url) as http,
                http.stream("POST", "/sessions/s1/messages", json={"message": "stream 1000 0.05 0"}) as response,
            ):
                run_id = response.headers["x-run-id"]
                for line in response.iter_lines():
                    if line and orjson.loads(line)["type"] == "text_delta":
                        break
                first.kill()
        assert first.wait(10) == -9

        with _gateway(config) as second, client(url) as http:
            wait_for_health(url, second)
            session = http.get("/sessions/s1").json()
            assert session["history"] == [{"role": "user", "content": "stream 1000 0.05 0"}]
            assert session["open_run"] == {"run_id": run_id, "state": "interrupted"}
            closed = lines_of(http.get(f"/runs/{run_id}/events"))
            assert closed[-1]["type"] == "run_failed" and closed[-1]["error_type"] == "Interrupted"

            events = lines_of(http.post("/sessions/s1/messages", json={"message": "echo hello again"}))
            assert events[0]["type"] == "run_started" and events[0]["interrupted_run"] == run_id
            assert events[-1]["type"] == "run_completed" and events[-1]["content"] == "hello again"
            after = http.get("/sessions/s1").json()
            assert after["open_run"] is None
            assert [m["content"] for m in after["history"] if m["role"] == "user"] == [
                "stream 1000 0.05 0",
                "echo hello again",
            ]
