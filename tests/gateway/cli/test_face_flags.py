"""What the operator gives the standard A2A faces from the command line: push notifications, the extended card,
the gateway's gRPC port. Flags reach the app; a wrong one is a usage error saying what to write; a real
``switchboard serve`` and ``switchboard gateway`` then offer what they were given in their cards."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

import agent_server
from agent_server.http.loopback import free_port
from agent_server.push.settings import PushSettings
from gateway.cli.main import main
from protocol import REST_PATH
from tests.support.gateway_service import wait_for_health
from tests.support.waiting import PROCESS_S, wait_until

ROOT = Path(__file__).resolve().parents[3]
EXTENDED = """
description = "The echo agent, as its operator's callers know it."

[[skills]]
id = "backstage"
name = "Backstage"
tags = ["ops"]
"""


@pytest.fixture
def extended_card(tmp_path: Path) -> Path:
    path = tmp_path / "extended.toml"
    path.write_text(EXTENDED, encoding="utf-8")
    return path


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What ``switchboard serve`` hands create_app; no server runs."""
    given: dict[str, Any] = {}
    real = agent_server.create_app

    def create_app(agent: Any, **options: Any) -> Any:
        given.update(options)
        return real(agent, **options)

    class Server:
        started = True

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(agent_server, "create_app", create_app)
    monkeypatch.setattr(agent_server, "build_server", lambda app, **options: Server())
    monkeypatch.setattr(agent_server, "run_server", lambda server, sockets: None)
    return given


def _serve(*flags: str) -> int:
    return main(["serve", "examples.echo:agent", "--port", str(free_port()), *flags])


def test_push_is_off_unless_asked_for(served: dict[str, Any]) -> None:
    assert _serve() == 0
    assert served["push"] is None and served["extended_card"] is None


def test_push_and_its_hosts_reach_the_app(served: dict[str, Any]) -> None:
    assert _serve("--push", "--push-host", "127.0.0.1", "--push-host", "*.hooks.internal") == 0
    assert served["push"] == PushSettings(allowed_hosts=("127.0.0.1", "*.hooks.internal"))
    assert _serve("--push") == 0
    assert served["push"] == PushSettings()


def test_the_extended_card_file_reaches_the_app(
    served: dict[str, Any], extended_card: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWITCHBOARD_AGENT_TOKEN", "t0ken")
    assert _serve("--extended-card", str(extended_card)) == 0
    card = served["extended_card"]
    assert card.description == "The echo agent, as its operator's callers know it."
    assert [(skill.id, skill.tags) for skill in card.skills] == [("backstage", ["ops"])]


@pytest.mark.parametrize(
    ("flags", "token", "contents", "message"),
    [
        (["--push-host", "127.0.0.1"], None, None, "--push-host allows a webhook host for push notifications"),
        (["--push", "--push-host", "http://hooks/x"], None, None, "--push-host: allowed webhook host 'http://hooks/x'"),
        (["--extended-card", "{card}"], None, 'description = "x"\n', "--extended-card is for callers with a token"),
        (["--extended-card", "{card}"], "t0ken", None, "cannot read it"),
        (["--extended-card", "{card}"], "t0ken", "description = \n", "not valid TOML"),
        (["--extended-card", "{card}"], "t0ken", "[[skills]]\nid = 'x'\n", "skills[0].name: is required"),
        (["--extended-card", "{card}"], "t0ken", "descripton = 'typo'\n", "descripton: unknown key 'descripton'"),
        (["--extended-card", "{card}"], "t0ken", "", "an extended card adds a description, skills or both"),
    ],
)
def test_a_wrong_flag_or_extended_card_file_is_a_usage_error_saying_what_to_do(
    flags: list[str],
    token: str | None,
    contents: str | None,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if token is None:
        monkeypatch.delenv("SWITCHBOARD_AGENT_TOKEN", raising=False)
    else:
        monkeypatch.setenv("SWITCHBOARD_AGENT_TOKEN", token)
    card = tmp_path / "card.toml"
    if contents is not None:
        card.write_text(contents, encoding="utf-8")
    monkeypatch.chdir(ROOT)
    assert _serve(*(flag.format(card=card) for flag in flags)) == 2
    assert message in capsys.readouterr().err


def _started(argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gateway", *argv],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env, "PYTHONUNBUFFERED": "1"},
    )


def _card(url: str, process: subprocess.Popen[str]) -> dict[str, Any]:
    """The v1.0 card, once the server answers; fails the test if the process exits first."""
    found: dict[str, Any] = {}

    def answered() -> bool:
        assert process.poll() is None, f"the server exited: {process.communicate()[1]}"
        try:
            found.update(httpx.get(f"{url}/.well-known/agent-card.json", headers={"a2a-version": "1.0"}).json())
        except httpx.TransportError:
            return False
        return True

    wait_until(answered, "the server to answer", PROCESS_S)
    return found


def _stop(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.communicate()


def test_serve_offers_push_and_the_extended_card_it_was_given(extended_card: Path) -> None:
    port = free_port()
    argv = ["serve", "examples/echo.py:agent", "--port", str(port), "--push", "--extended-card", str(extended_card)]
    process = _started(argv, {"SWITCHBOARD_AGENT_TOKEN": "t0ken"})
    url = f"http://127.0.0.1:{port}"
    try:
        card = _card(url, process)
        assert card["capabilities"]["pushNotifications"] is True and card["capabilities"]["extendedAgentCard"] is True
        headers = {"a2a-version": "1.0", "authorization": "Bearer t0ken"}
        extended = httpx.get(f"{url}{REST_PATH}/extendedAgentCard", headers=headers).json()
        assert "backstage" in {skill["id"] for skill in extended["skills"]}
        refused = httpx.get(f"{url}{REST_PATH}/extendedAgentCard", headers={"a2a-version": "1.0"})
        assert refused.status_code == 401 and refused.json()["error"]["status"] == "UNAUTHENTICATED"
    finally:
        _stop(process)


def test_the_gateway_serves_grpc_on_the_port_its_flag_gives_with_push_from_its_file(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(
        f'[gateway]\ndata_dir = "{tmp_path / "data"}"\n[gateway.push]\nenabled = true\n', encoding="utf-8"
    )
    port, grpc_port = free_port(), free_port()
    process = _started(["gateway", "--config", str(config), "--port", str(port), "--grpc-port", str(grpc_port)], {})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, process)
        card = _card(url, process)
        grpc = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
        assert grpc == [f"127.0.0.1:{grpc_port}"]
        assert card["capabilities"]["pushNotifications"] is True
    finally:
        _stop(process)


def test_the_gateway_refuses_grpc_on_a_non_loopback_host_without_a_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SWITCHBOARD_ADMIN_TOKEN", raising=False)
    config = tmp_path / "gateway.toml"
    config.write_text('[gateway]\ngrpc_port = 0\ngrpc_host = "0.0.0.0"\n', encoding="utf-8")
    assert main(["gateway", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "refusing to serve the gateway on 0.0.0.0 without a token" in err and "--insecure" in err
