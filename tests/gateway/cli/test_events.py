"""``switchboard events``: a run's events from a gateway service; ``--follow`` sees a live run to its end."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from gateway.cli.main import main
from tests.support.gateway_service import agent_server, client, gateway_server, lines_of, remote_first_service
from tests.support.lockstep import Lockstep
from tests.support.waiting import PROCESS_S

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def gateway_url(scripted_url: str) -> Iterator[str]:
    """The scripted remote agent answers first, so ``stream N INTERVAL`` makes a slow run."""
    with gateway_server(remote_first_service(scripted_url)) as url:
        yield url


def test_follow_prints_a_live_run_from_the_start_until_it_ends() -> None:
    """The remote agent makes each chunk only once the command has printed the line before it (run_started, then
    each delta): the run ends only if the command prints it live."""
    lockstep = Lockstep(chunks=6)
    with (
        agent_server(lockstep.agent()) as agent_url,
        gateway_server(remote_first_service(agent_url, "lockstep")) as url,
        client(url) as http,
        http.stream("POST", "/sessions/ev/messages", json={"message": "go"}) as run,
    ):
        run_id = run.headers["x-run-id"]
        process = subprocess.Popen(
            [sys.executable, "-m", "gateway", "events", run_id, "--follow", "--gateway", url],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            assert process.stdout is not None
            events = []
            for line in process.stdout:
                events.append(orjson.loads(line))
                if events[-1]["type"] in ("run_started", "text_delta"):
                    lockstep.seen()
            assert process.wait(timeout=PROCESS_S) == 0, process.stderr.read() if process.stderr else ""
        finally:
            if process.poll() is None:
                process.kill()
            process.communicate()
        streamed = [orjson.loads(line) for line in run.iter_lines() if line]
    assert [e["seq"] for e in events] == list(range(len(events))) and events[-1]["type"] == "run_completed"
    assert [e["type"] for e in events].count("text_delta") == 6
    assert events == streamed  # exactly what the client of the session saw


def test_without_follow_it_prints_what_is_stored_from_a_seq(
    gateway_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with client(gateway_url) as http:
        response = http.post("/sessions/ev2/messages", json={"message": "stream 2 0.01"})
        run_id = response.headers["x-run-id"]
        stored = lines_of(response)
    assert main(["events", run_id, "--gateway", gateway_url]) == 0
    assert [orjson.loads(line) for line in capsys.readouterr().out.splitlines()] == stored
    assert main(["events", run_id, "--gateway", gateway_url, "--after-seq", "2"]) == 0
    assert [orjson.loads(line)["seq"] for line in capsys.readouterr().out.splitlines()] == [
        e["seq"] for e in stored[3:]
    ]


def test_an_unknown_run_and_an_unreachable_gateway_exit_1_with_a_message(
    gateway_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["events", "run_nope", "--gateway", gateway_url]) == 1
    assert capsys.readouterr().err.strip() == (
        "switchboard events: the gateway answered 404: no run 'run_nope' in the event log (GET /runs lists them)"
    )
    assert main(["events", "run_nope", "--gateway", "http://127.0.0.1:1"]) == 1
    assert "cannot reach the gateway at http://127.0.0.1:1" in capsys.readouterr().err


def test_a_run_id_with_url_characters_is_sent_as_one_path_segment(
    gateway_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["events", "run?x=1", "--gateway", gateway_url]) == 1
    assert "no run 'run?x=1' in the event log" in capsys.readouterr().err


def test_no_run_session_or_all_exits_2_with_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["events"])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: switchboard events ")
    assert err.endswith("error: one of the arguments RUN_ID --session --all is required\n")
