"""``switchboard serve`` as a real subprocess: lines reach httpx and curl as the agent makes them."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

import agent_server
from agent_server import ServerLimits
from agent_server.http import speedups
from agent_server.http.loopback import free_port
from gateway.cli.main import main
from tests.support.terminal import Terminal
from tests.support.waiting import PROCESS_S

ROOT = Path(__file__).resolve().parents[3]
BODY = {
    "message": {"parts": [{"type": "text", "text": "tides"}]},
    "metadata": {"chunks": 1000, "intervalS": 0.05},
}
"""50 s of chunks: the tests cancel it once they have seen three arrive, while it still works."""


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway", "serve", "examples/researcher.py:agent", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            output, _ = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
            pytest.fail(f"switchboard serve did not stop on SIGTERM:\n{output.decode(errors='replace')}")
    assert b"state=working" in output and b"state=canceled" in output  # one log line per task state change


def _wait_until_up(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + PROCESS_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"switchboard serve exited: {process.stdout.read().decode()}")  # type: ignore[union-attr]
        try:
            httpx.get(f"{url}/.well-known/agent.json", timeout=0.5)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError("switchboard serve did not come up")


def _cancel_once_streaming(server_url: str, lines: list[dict[str, Any]]) -> None:
    """After three chunks, check the task works, then cancel it; a stream read whole at the end never gets here."""
    if lines[-1]["type"] == "artifact" and [line["type"] for line in lines].count("artifact") == 3:
        task_id = lines[0]["id"]
        assert httpx.get(f"{server_url}/tasks/{task_id}", timeout=10).json()["status"]["state"] == "working"
        assert httpx.post(f"{server_url}/tasks/cancel", json={"id": task_id}, timeout=10).status_code == 200


def _assert_streamed_then_canceled(lines: list[dict[str, Any]]) -> None:
    assert [line["seq"] for line in lines] == list(range(len(lines))) and lines[-1]["final"] is True
    assert lines[-1]["status"]["state"] == "canceled"
    assert [line["type"] for line in lines].count("artifact") >= 3
    assert all(line["cost_usd"] == 0.0005 for line in lines if line["type"] == "artifact")


def test_httpx_sees_lines_as_the_researcher_produces_them(server_url: str) -> None:
    lines: list[dict[str, Any]] = []
    with httpx.stream("POST", f"{server_url}/tasks/sendSubscribe", json=BODY, timeout=10) as response:
        assert response.headers["content-type"] == "application/x-ndjson"
        for raw in response.iter_lines():
            lines.append(orjson.loads(raw))
            _cancel_once_streaming(server_url, lines)
    _assert_streamed_then_canceled(lines)


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_sees_lines_as_the_researcher_produces_them(server_url: str) -> None:
    command = [
        "curl", "-sN", "-H", "Content-Type: application/json", "-d", orjson.dumps(BODY).decode(),
        f"{server_url}/tasks/sendSubscribe",
    ]  # fmt: skip
    lines: list[dict[str, Any]] = []
    with subprocess.Popen(command, stdout=subprocess.PIPE) as curl:
        assert curl.stdout is not None
        for raw in curl.stdout:
            lines.append(orjson.loads(raw))
            _cancel_once_streaming(server_url, lines)
    assert curl.returncode == 0
    _assert_streamed_then_canceled(lines)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("examples/echo.py:missing", "has no attribute 'missing'"),
        ("examples/absent.py:agent", "no such file"),
        ("no_such_module_xyz:agent", "cannot import module 'no_such_module_xyz'"),
        ("examples.echo:app", "is an ASGI app, not an agent"),
        ("examples.researcher:DEFAULT_CHUNKS", "is a int, not an agent"),
        (":agent", "is not MODULE:ATTR"),
    ],
)
def test_bad_targets_get_a_clear_error(
    target: str, message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["serve", target]) == 2
    assert message in capsys.readouterr().err


def test_a_bad_store_spec_gets_a_clear_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["serve", "examples.echo:agent", "--store", "redis:x"]) == 2
    assert 'use "memory", "sqlite:PATH" or "redis://HOST:PORT/DB"' in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "99999"], "must be a port number from 0 to 65535, got '99999'"),
        (["--port", "http"], "must be a port number from 0 to 65535"),
        (["--store", "sqlite:."], "cannot open the task store '.'"),
        (["--max-connections", "0"], "must be a whole number of at least 1, got '0'"),
        (["--header-timeout", "-1"], "must be a number of seconds greater than 0, got '-1'"),
        (["--body-timeout", "soon"], "must be a number of seconds greater than 0, got 'soon'"),
    ],
)
def test_a_bad_port_or_unopenable_store_is_a_usage_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both used to end in a traceback (OverflowError from bind, sqlite3.OperationalError)."""
    monkeypatch.chdir(ROOT)
    try:
        code = main(["serve", "examples.echo:agent", *argv])
    except SystemExit as exc:  # argparse refuses bad argument values itself
        code = exc.code
    assert code == 2
    assert message in capsys.readouterr().err


def test_the_limit_flags_reach_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    served: dict[str, Any] = {}
    monkeypatch.chdir(ROOT)

    class Server:
        started = True

    def build_server(app: Any, **options: Any) -> Server:
        served.update(options)
        return Server()

    def run_server(server: Server, sockets: list[Any]) -> None:
        served["sockets"] = sockets

    monkeypatch.setattr(agent_server, "build_server", build_server)
    monkeypatch.setattr(agent_server, "run_server", run_server)
    argv = ["serve", "examples.echo:agent", "--max-connections", "7", "--header-timeout", "2.5", "--body-timeout", "4"]
    argv += ["--port", str(free_port()), "--loop", "asyncio", "--http", "httptools"]
    assert main(argv) == 0
    assert len(served["sockets"]) == 1, "the port was bound before the server was built"
    assert served["limits"] == ServerLimits(max_connections=7, header_timeout_s=2.5, body_timeout_s=4.0)
    assert (served["loop"], served["http"]) == ("asyncio", "httptools")


@pytest.mark.parametrize(("flag", "module"), [("--loop", "uvloop"), ("--http", "httptools")])
def test_a_loop_or_parser_that_is_not_installed_is_a_usage_error_saying_how_to_install_it(
    flag: str, module: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(speedups, "_installed", lambda name: False)
    monkeypatch.chdir(ROOT)
    assert main(["serve", "examples.echo:agent", "--port", str(free_port()), flag, module]) == 2
    assert f"{module} is not installed: pip install 'a2a-switchboard[speed]'" in capsys.readouterr().err


def test_no_subcommand_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "serve" in capsys.readouterr().err


def test_serve_refuses_a_non_loopback_address_without_a_token(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SWITCHBOARD_AGENT_TOKEN", raising=False)
    assert main(["serve", "examples/echo.py:agent", "--host", "0.0.0.0", "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert "refusing to serve an agent on 0.0.0.0 without a token" in err and "--insecure" in err


def test_serve_with_a_token_requires_it_on_every_call_but_the_card(monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    env = {**os.environ, "MY_AGENT_TOKEN": "t0ken", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gateway",
            "serve",
            "examples/echo.py:agent",
            "--port",
            str(port),
            "--token-env",
            "MY_AGENT_TOKEN",
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + PROCESS_S
        while True:
            try:
                card = httpx.get(f"{url}/.well-known/agent.json", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, "the agent server did not start"
                time.sleep(0.05)
        assert card.status_code == 200 and card.json()["security"] == [{"bearer": []}]
        body = {"message": {"parts": [{"text": "hi"}]}}
        assert httpx.post(f"{url}/tasks/send", json=body).status_code == 401
        sent = httpx.post(f"{url}/tasks/send", json=body, headers={"authorization": "Bearer t0ken"})
        assert sent.status_code == 200 and sent.json()["status"]["state"] == "completed"
    finally:
        process.kill()
        process.communicate()


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("import os\n\n\ndef agent(:\n    pass\n", "broken.py, line 4: SyntaxError: invalid syntax"),
        ("import os\nimport no_such_module_xyz\n", "broken.py, line 2: ModuleNotFoundError: No module named"),
        ("import os\nraise RuntimeError('database down')\n", "broken.py, line 2: RuntimeError: database down"),
    ],
)
def test_an_agent_file_that_cannot_be_imported_gets_one_line_naming_file_line_and_error(
    source: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "broken.py").write_text(source, encoding="utf-8")
    assert main(["serve", f"{tmp_path / 'broken.py'}:agent"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("switchboard serve: error: cannot import ") and message in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("token", [None, "serve-secret-token"])
def test_serve_says_in_one_line_where_it_listens_what_it_serves_and_whether_a_token_is_needed(
    token: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if token is None:
        monkeypatch.delenv("SWITCHBOARD_AGENT_TOKEN", raising=False)
    else:
        monkeypatch.setenv("SWITCHBOARD_AGENT_TOKEN", token)
    with Terminal("serve", "examples/echo.py:agent", "--port", "0") as terminal:
        line = terminal.expect(
            r"switchboard serve: agent 'echo' on (http://127\.0\.0\.1:\d+) "
            r"\(A2A JSON-RPC at /, HTTP\+JSON at /a2a/rest, NDJSON at /tasks\); (.*)\r?\n"
        )
        assert line.group(2) == ("no token needed" if token is None else "token required ($SWITCHBOARD_AGENT_TOKEN)")
        terminal.expect("Application startup complete")
        card = httpx.get(f"{line.group(1)}/.well-known/agent-card.json", timeout=10)
        assert card.status_code == 200 and card.json()["name"] == "echo"
