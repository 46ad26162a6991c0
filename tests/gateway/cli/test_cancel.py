"""``switchboard cancel RUN_ID``: the owner's token (``$SWITCHBOARD_GATEWAY_TOKEN``) ends the run, another's cannot."""

from __future__ import annotations

import httpx
import orjson
import pytest

from agent_server import Principal, TokenTable
from gateway.cli.cancel import GATEWAY_TOKEN_ENV
from gateway.cli.main import main
from gateway.service import create_gateway_app
from tests.support.gateway_service import remote_first_service
from tests.support.servers import serve_app

ALICE, BOB = "alice-secret", "bob-secret"
TOKENS = TokenTable({ALICE: Principal("alice", "chat"), BOB: Principal("bob", "chat")})


def test_the_owner_cancels_a_run_and_another_caller_cannot(
    scripted_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with (
        serve_app(create_gateway_app(remote_first_service(scripted_url), tokens=TOKENS)) as url,
        httpx.Client(base_url=url, headers={"authorization": f"Bearer {ALICE}"}, timeout=30) as http,
        http.stream("POST", "/sessions/cli-cancel/messages", json={"message": "sleep"}) as run,
    ):
        run_id = run.headers["x-run-id"]
        monkeypatch.setenv(GATEWAY_TOKEN_ENV, BOB)
        assert main(["cancel", run_id, "--gateway", url]) == 1
        assert "404" in capsys.readouterr().err
        monkeypatch.setenv(GATEWAY_TOKEN_ENV, ALICE)
        assert main(["cancel", run_id, "--gateway", url]) == 0
        assert f"run {run_id} cancelled" in capsys.readouterr().out
        events = [orjson.loads(line) for line in run.iter_lines() if line]
    assert events[-1]["type"] == "run_failed" and events[-1]["error"] == "cancelled: asked by alice"
    assert main(["cancel", run_id, "--gateway", url]) == 1, "the gateway is gone: one line, exit 1"
