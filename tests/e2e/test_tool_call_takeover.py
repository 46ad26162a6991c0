"""An agent tool call outlives its gateway: killed with SIGKILL mid-call, the restarted gateway follows the call again.

`switchboard gateway` runs on SQLite files with one streaming agent tool whose agent (the
scripted one, in the test's process, its ``Probe`` counting how often its code began)
streams slowly. The gateway is killed while the call streams and started again on the same
data: the call's run goes on (``run_resumed``), the task followed again by its id, never sent
twice, and it ends ``agent_tool_completed`` with the whole text.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson

from agent_server.http.loopback import free_port
from agent_server.testing import Probe, scripted_agent
from gateway.recording.events import Event, call_text
from tests.support.gateway_process import gateway_process
from tests.support.gateway_service import agent_server, client, lines_of, wait_for_health
from tests.support.waiting import PROCESS_S

CHUNKS = 120
TEXT = "".join(f"chunk-{index} " for index in range(CHUNKS))


def test_a_tool_call_killed_mid_stream_is_followed_again_at_restart_and_its_agent_ran_once(tmp_path: Path) -> None:
    probe = Probe()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with agent_server(scripted_agent("scripted", probe=probe)) as agent_url:
        config = tmp_path / "gateway.toml"
        config.write_text(
            f'[gateway]\nport = {port}\ndata_dir = "{tmp_path / "data"}"\n\n'
            f'[[tools]]\nname = "slow_tool"\nagent = "{agent_url}"\nmode = "streaming"\n',
            encoding="utf-8",
        )
        with gateway_process(config) as first:
            wait_for_health(url, first)
            body = {"input": f"stream {CHUNKS} 0.05 0", "stream": True}
            with client(url) as http, http.stream("POST", "/tools/slow_tool/call", json=body) as response:
                run_id = response.headers["x-run-id"]
                chunks = 0
                for line in response.iter_lines():
                    chunks += bool(line) and orjson.loads(line)["type"] == "agent_tool_progress"
                    if chunks == 4:
                        break
                first.kill()
        assert first.wait(10) == -9

        with gateway_process(config) as second, httpx.Client(base_url=url, timeout=PROCESS_S) as http:
            wait_for_health(url, second)
            events = lines_of(http.get(f"/runs/{run_id}/events", params={"follow": "1"}))
    assert [e["seq"] for e in events] == list(range(len(events))), "one run, no gap, no duplicate"
    kinds = [e["type"] for e in events]
    assert kinds.count("agent_tool_invoked") == 1 and kinds.count("run_resumed") == 1
    invoked = events[0]
    assert probe.starts(invoked["task_id"]) == 1
    assert events[-1]["type"] == "agent_tool_completed" and events[-1]["call_id"] == invoked["call_id"]
    typed = [Event.from_dict(event) for event in events]
    assert call_text(typed, invoked["call_id"]) == TEXT  # stored once: the chunks joined, taken over or not
    assert events[-1]["chunks"] == kinds.count("agent_tool_progress")
