"""``switchboard gateway --config FILE`` as a real process: it starts, answers, and stops cleanly on SIGTERM."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agent_server.http.loopback import free_port
from agent_server.http.speedups import HTTP_PARSERS
from gateway.cli.main import main
from tests.support.gateway_service import wait_for_health
from tests.support.waiting import PROCESS_S

ROOT = Path(__file__).resolve().parents[3]


def _start(config: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gateway", "gateway", "--config", str(config), *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_it_serves_the_configured_swarm_and_terminates_cleanly(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "gateway.toml"
    config.write_text(
        f'[gateway]\nport = 1\nname = "desk"\ndata_dir = "{tmp_path / "data"}"\n\n'
        '[[agents]]\nname = "frontdesk"\ninstructions = "Greet visitors."\n',
        encoding="utf-8",
    )
    process = _start(config, "--port", str(port))
    url = f"http://127.0.0.1:{port}"
    try:
        health = wait_for_health(url, process)
        assert health == {"status": "ok", "name": "desk", "starting_agent": "frontdesk", "agents": 1, "tools": 0}
        answer = httpx.post(f"{url}/sessions/s/messages", json={"message": "hello", "stream": False}, timeout=10).json()
        assert answer["active_agent_name"] == "frontdesk"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            _, stderr = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail(f"the gateway did not stop on SIGTERM: {process.communicate()[1]}")
    assert process.returncode == 0, stderr
    assert (
        f"switchboard gateway 'desk' on http://127.0.0.1:{port}" in stderr and "Application shutdown complete" in stderr
    )
    assert {p.name for p in (tmp_path / "data").iterdir()} >= {"events.db", "sessions.db"}


def test_a_bad_configuration_exits_2_naming_file_key_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text('[[tools]]\nname = "t"\nagent = "http://127.0.0.1:9"\nmode = "fast"\n', encoding="utf-8")
    assert main(["gateway", "--config", str(config)]) == 2
    assert capsys.readouterr().err == (
        "switchboard gateway: invalid configuration:\n"
        f"{config}: tools[0].mode: unknown mode 'fast' (expected sync, streaming, conversational)\n"
    )


def test_check_prints_the_effective_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text("[limits]\nmax_tool_iterations = 4\n", encoding="utf-8")
    monkeypatch.setenv("SWITCHBOARD_PORT", "9400")
    assert main(["gateway", "--config", str(config), "--check", "--host", "0.0.0.0"]) == 0
    effective = json.loads(capsys.readouterr().out)
    assert effective["gateway"]["port"] == 9400 and effective["gateway"]["host"] == "0.0.0.0"
    assert effective["limits"]["max_tool_iterations"] == 4 and effective["agents"][0]["name"] == "assistant"


def test_an_unreachable_remote_agent_stops_the_start_with_one_clear_line(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(
        f"[gateway]\nport = {free_port()}\nstartup_wait_secs = 0.8\n\n"
        '[stores]\nsessions = "memory"\nevents = "memory"\n\n'
        '[[agents]]\nname = "triage"\nhandoffs = ["billing"]\n\n[[agents]]\nname = "billing"\nurl = "http://127.0.0.1:1"\n',
        encoding="utf-8",
    )
    process = _start(config)
    _, stderr = process.communicate(timeout=PROCESS_S)
    assert process.returncode == 1
    last = stderr.rstrip().splitlines()[-1]
    assert last.startswith(
        f"switchboard gateway: could not start: {config}: agents[1] ('billing'): "
        "cannot fetch the agent card from http://127.0.0.1:1: cannot reach"
    )
    assert last.endswith("over 0.8 s)")
    assert "remote agent http://127.0.0.1:1 not reachable yet (attempt 1: " in stderr


def test_check_reports_unimportable_tools_and_unset_api_keys_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SWITCHBOARD_TEST_KEY", raising=False)
    config = tmp_path / "gateway.toml"
    config.write_text(
        '[[agents]]\nname = "a"\nmodel = "openai:gpt-4o-mini"\napi_key_env = "SWITCHBOARD_TEST_KEY"\n'
        'tools = ["no_such_package_xyz.module:func"]\n',
        encoding="utf-8",
    )
    for extra in (["--check"], []):
        assert main(["gateway", "--config", str(config), *extra]) == 2
        err = capsys.readouterr().err.splitlines()
        assert err[0] == "switchboard gateway: invalid configuration:"
        assert err[1].startswith(f"{config}: agents[0].tools[0]: cannot import 'no_such_package_xyz.module:func': ")
        assert err[2] == (
            f"{config}: agents[0].api_key_env: the environment variable SWITCHBOARD_TEST_KEY is not set "
            "(it should hold the API key)"
        )


@pytest.mark.parametrize("check", [True, False])
@pytest.mark.parametrize(
    ("variable", "value", "key"),
    [
        ("SWITCHBOARD_DATA_DIR", "{file}", "gateway.data_dir"),
        ("SWITCHBOARD_SESSIONS_STORE", "sqlite:{file}/x.db", "stores.sessions"),
        ("SWITCHBOARD_TASKS_STORE", "sqlite:{file}/sub/tasks.db", "stores.tasks"),
    ],
)
def test_a_store_path_under_a_file_exits_2_naming_the_key(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    key: str,
    check: bool,
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory", encoding="utf-8")
    monkeypatch.setenv(variable, value.format(file=a_file))
    assert main(["gateway", *(["--check"] if check else [])]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"switchboard gateway: invalid configuration:\nconfiguration: {key}: ")
        and "Traceback" not in err
    )
    assert f"{a_file} is a file, not a directory" in err


def test_a_store_that_cannot_be_opened_is_a_config_error_and_closes_what_was_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.config.load import validate_config
    from gateway.errors import ConfigError
    from gateway.service import build, build_service
    from gateway.swarm import SQLiteSessionStore

    closed: list[str] = []
    original = SQLiteSessionStore.close

    async def close(self: SQLiteSessionStore) -> None:
        closed.append(self.path)
        await original(self)

    def broken(spec: str, **settings: object) -> None:
        raise ValueError(f"cannot open the event log {spec!r}: disk I/O error")

    monkeypatch.setattr(SQLiteSessionStore, "close", close)
    monkeypatch.setattr(build, "open_event_log", broken)
    config = validate_config({"gateway": {"data_dir": str(tmp_path)}})
    with pytest.raises(ConfigError) as caught:
        build_service(config, "gw.toml")
    assert str(caught.value).startswith(
        "gw.toml: gateway.data_dir: cannot open the events store: cannot open the event log"
    )
    assert closed == [str(tmp_path / "sessions.db")]


@pytest.mark.parametrize("http", HTTP_PARSERS)
def test_the_gateway_cuts_a_slow_client_by_its_configured_header_timeout_while_serving_others(
    tmp_path: Path, http: str
) -> None:
    port = free_port()
    config = tmp_path / "gateway.toml"
    config.write_text(
        f'[gateway]\nport = {port}\nheader_timeout_secs = 0.5\nhttp = "{http}"\n\n'
        '[stores]\nsessions = "memory"\nevents = "memory"\n',
        encoding="utf-8",
    )
    process = _start(config)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, process)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as slow:
            slow.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # never ends its headers
            assert httpx.get(f"{url}/health", timeout=5).status_code == 200
            answer = slow.recv(4096)  # the server ends it: a 408, then the close
            assert answer.startswith(b"HTTP/1.1 408"), answer
    finally:
        process.kill()
        process.communicate()


def test_the_configured_parser_and_loop_build_the_server(tmp_path: Path) -> None:
    from starlette.applications import Starlette

    from agent_server.http.server import LimitedH11Protocol, LimitedHttpToolsProtocol
    from gateway.config.load import validate_config
    from gateway.service.server import build_gateway_server

    for settings, protocol, loop in [
        ({}, LimitedH11Protocol, "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"),
        ({"http": "httptools", "loop": "asyncio"}, LimitedHttpToolsProtocol, "asyncio"),
    ]:
        config = validate_config({"gateway": {"data_dir": str(tmp_path), **settings}})
        server = build_gateway_server(Starlette(), config)
        assert server.config.http.func is protocol  # type: ignore[union-attr]
        assert server.config.loop == loop


@pytest.mark.parametrize(("key", "module"), [("loop", "uvloop"), ("http", "httptools")])
def test_a_loop_or_parser_that_is_not_installed_exits_2_saying_how_to_install_it(
    key: str, module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_server.http import speedups

    monkeypatch.setattr(speedups, "_installed", lambda name: False)
    config = tmp_path / "gateway.toml"
    config.write_text(f'[gateway]\n{key} = "{module}"\n', encoding="utf-8")
    for extra in (["--check"], []):
        assert main(["gateway", "--config", str(config), *extra]) == 2
        assert capsys.readouterr().err == (
            f"switchboard gateway: invalid configuration:\n"
            f"{config}: gateway.{key}: {module} is not installed: pip install 'a2a-switchboard[speed]'\n"
        )


def test_the_gateway_refuses_to_serve_a_non_loopback_address_without_a_token(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text('[gateway]\nhost = "0.0.0.0"\n', encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "SWITCHBOARD_ADMIN_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "gateway", "--config", str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "refusing to serve the gateway on 0.0.0.0 without a token" in done.stderr
    assert "SWITCHBOARD_ADMIN_TOKEN" in done.stderr and "--insecure" in done.stderr
