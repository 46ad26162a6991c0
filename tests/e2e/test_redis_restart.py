"""Redis killed and started again under a running gateway process: a call in flight fails with a clear error, nothing
acknowledged is lost (append-only file, ``appendfsync always``), and the gateway reconnects by itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from agent_server import create_app
from agent_server.testing import scripted_agent
from gateway.event_log.redis import STORE_LOST
from tests.support.redis import LocalRedis
from tests.support.replicas import lines_of, replica_config, replicas
from tests.support.servers import serve_app
from tests.support.waiting import PROCESS_S, wait_until


def test_a_redis_restart_fails_the_call_in_flight_clearly_loses_nothing_acknowledged_and_heals(tmp_path: Path) -> None:
    agents = (
        '[[agents]]\nname = "assistant"\nhandoffs = ["stream"]\n\n'
        '[[agents]]\nname = "stream"\nurl = "{url}"\ndescription = "Streams chunks, for the stream command."\n'
    )
    with (
        LocalRedis(tmp_path / "redis", fsync="always") as redis,
        serve_app(create_app(scripted_agent("stream"))) as agent_url,
    ):
        config = replica_config(f"{redis.url}/0?prefix=restart", lease_s=1.0, agents=agents.format(url=agent_url))
        with replicas(tmp_path, config, 1) as (gateway,), gateway.client() as http:
            done = http.post("/sessions/before/messages", json={"message": "stream 3 0 0", "stream": False})
            assert done.status_code == 200, done.text
            before = lines_of(http.get(f"/runs/{done.json()['run_id']}/events"))

            received: list[dict[str, Any]] = []
            with http.stream("POST", "/sessions/during/messages", json={"message": "stream 1000 0.02 0"}) as turn:
                lines = turn.iter_lines()
                for line in lines:
                    if line:
                        received.append(orjson.loads(line))
                    if sum(e["type"] == "text_delta" for e in received) >= 5:
                        break
                redis.kill()
                refused = http.post("/sessions/other/messages", json={"message": "stream 1 0 0", "stream": False})
                assert refused.status_code == 503
                message = refused.json()["error"]["message"]
                assert f"at {redis.url}/0" in message and "is unreachable" in message and "retry" in message
                # Redis stays down until the turn in flight has met the outage (a write of its failed), however
                # short its chunks' spacing: else the turn may write nothing while Redis is away, and complete.
                failed = f"run {received[0]['run_id']} of session during failed"
                wait_until(lambda: failed in gateway.log.read_text(errors="replace"), failed, PROCESS_S)
                redis.start()
                received.extend(orjson.loads(line) for line in lines if line)
            assert received[-1]["type"] == "run_failed", "the stream ends with the failure, it is not cut"
            # the turn's own failure, if it could write it once Redis was back, else the log's STORE_LOST close
            assert received[-1]["error"] == STORE_LOST or "is unreachable" in received[-1]["error"]
            assert [e["seq"] for e in received] == list(range(len(received)))

            assert lines_of(http.get(f"/runs/{before[0]['run_id']}/events")) == before
            assert lines_of(http.get(f"/runs/{received[0]['run_id']}/events")) == received
            session = http.get("/sessions/during").json()
            assert session["history"] == [{"role": "user", "content": "stream 1000 0.02 0"}]
            assert session["open_run"] == {"run_id": received[0]["run_id"], "state": "interrupted"}

            answer = http.post("/sessions/after/messages", json={"message": "stream 2 0 0", "stream": False})
            assert answer.status_code == 200, (
                f"the same gateway process serves turns again, without a restart: {answer.text}"
            )
            assert answer.json()["content"].strip() == "chunk-0 chunk-1"


def test_a_redis_blip_with_a_tool_call_in_flight_leaves_the_gateway_serving(tmp_path: Path) -> None:
    tools = '[[tools]]\nname = "streamer"\nagent = "{url}"\nmode = "streaming"\n'
    with (
        LocalRedis(tmp_path / "redis", fsync="always") as redis,
        serve_app(create_app(scripted_agent("stream"))) as agent_url,
    ):
        config = replica_config(f"{redis.url}/0?prefix=blip", lease_s=1.0, agents=tools.format(url=agent_url))
        with replicas(tmp_path, config, 1) as (gateway,), gateway.client() as http:
            received: list[dict[str, Any]] = []
            body = {"input": "stream 1000 0.02 0", "stream": True}
            with http.stream("POST", "/tools/streamer/call", json=body) as call:
                lines = call.iter_lines()
                for line in lines:
                    if line:
                        received.append(orjson.loads(line))
                    if len(received) >= 5:
                        break
                redis.kill()
                failed = "agent tool streamer failed"
                wait_until(lambda: failed in gateway.log.read_text(errors="replace"), failed, PROCESS_S)
                # Liveness holds through the outage (the process is sound); readiness says it cannot take work.
                alive = http.get("/health")
                assert alive.status_code == 200 and alive.json()["status"] == "degraded", alive.text
                assert "is unreachable" in alive.json()["problem"]
                assert http.get("/ready").status_code == 503
                redis.start()
                received.extend(orjson.loads(line) for line in lines if line)
            assert received[-1]["type"] in ("agent_tool_error", "agent_tool_terminated", "run_failed"), received[-1]

            for attempt in range(3):  # every later call is served by the same process: it was not left broken
                answer = http.post("/tools/streamer/call", json={"input": f"stream 2 0 {attempt}"})
                assert answer.status_code == 200, answer.text
                turn = http.post(f"/sessions/after-{attempt}/messages", json={"message": "hi", "stream": False})
                assert turn.status_code == 200, turn.text
            assert http.get("/health").json()["status"] == "ok"
            assert http.get("/ready").json() == {"ready": True}
