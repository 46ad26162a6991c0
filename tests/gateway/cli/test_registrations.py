"""``switchboard agents``, ``tools`` and ``session``: what a gateway runs, listed and changed by a person."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agent_server import Principal, TokenTable
from agent_server.app import CARD_PATH
from gateway.cli.client import GATEWAY_TOKEN_ENV
from gateway.cli.main import main
from gateway.service import create_gateway_app
from tests.support.gateway_service import agent_server, billing_agent, triage_service
from tests.support.servers import serve_app
from tests.support.terminal import Terminal

ADMIN, ALICE = "admin-secret-token", "alice-secret-token"
TOKENS = TokenTable({ADMIN: Principal("root", "admin"), ALICE: Principal("alice", "chat")})


@pytest.fixture
def desk(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """A triage gateway behind tokens (the admin's in the environment) and a billing agent not yet registered."""
    monkeypatch.setenv(GATEWAY_TOKEN_ENV, ADMIN)
    with agent_server(billing_agent()) as billing_url:
        with serve_app(create_gateway_app(triage_service(), tokens=TOKENS)) as url:
            yield url, billing_url


def test_agents_are_listed_added_and_removed(desk: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    url, billing_url = desk
    assert main(["agents", "--gateway", url]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "  triage (starting): local, Route customers to the right specialist."
    ]
    assert main(["agents", "add", billing_url, "--name", "refunds", "--gateway", url]) == 0
    assert capsys.readouterr().out.startswith(f"added refunds: remote {billing_url}, Billing: refunds")
    assert main(["agents", "list", "--gateway", url]) == 0
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines()] == ["  triage (starting)", "  refunds"]
    assert main(["agents", "--gateway", url, "remove", "refunds"]) == 0
    assert capsys.readouterr().out == f"removed refunds ({billing_url})\n"
    assert main(["agents", "remove", "refunds", "--gateway", url]) == 1
    assert "the gateway answered 404: no agent named 'refunds'" in capsys.readouterr().err


def test_tools_are_listed_added_and_removed(desk: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    url, billing_url = desk
    assert main(["tools", "--gateway", url]) == 0
    assert capsys.readouterr().out == "no tools on this gateway\n"
    assert main(["tools", "add", "ledger", billing_url, "--attach-to", "triage", "--gateway", url]) == 0
    assert capsys.readouterr().out == f"added ledger: {billing_url} (sync), used by triage\n"
    assert main(["tools", "list", "--gateway", url]) == 0
    assert capsys.readouterr().out == f"  ledger: {billing_url} (sync), used by triage\n"
    assert main(["tools", "remove", "ledger", "--gateway", url]) == 0
    assert capsys.readouterr().out == "removed ledger\n"
    assert httpx.get(f"{url}/tools", headers={"authorization": f"Bearer {ADMIN}"}).json() == {"tools": []}


def test_a_session_is_moved_and_reset_on_a_terminal(desk: tuple[str, str]) -> None:
    url, billing_url = desk
    admin = {"authorization": f"Bearer {ADMIN}"}
    assert httpx.post(f"{url}/agents", json={"url": billing_url, "name": "billing"}, headers=admin).status_code == 201
    said = httpx.post(f"{url}/sessions/s1/messages", json={"message": "hello", "stream": False}, headers=admin)
    assert said.status_code == 200
    with Terminal("session", "s1", "--gateway", url) as terminal:
        terminal.expect(r"session s1: triage answers next; 2 messages")
        assert terminal.wait() == 0
    with Terminal("session", "s1", "move", "billing", "--gateway", url) as terminal:
        terminal.expect(r"session s1: billing takes the next message")
        assert terminal.wait() == 0
    assert httpx.get(f"{url}/sessions/s1", headers=admin).json()["active_agent"] == "billing"
    with Terminal("session", "s1", "move", "nobody", "--gateway", url) as terminal:
        terminal.expect(r"switchboard session: the gateway answered 404: no agent named 'nobody'")
        assert terminal.wait() == 1
    with Terminal("session", "s1", "reset", "--gateway", url) as terminal:
        terminal.expect(r"session s1 reset")
        assert terminal.wait() == 0
    assert httpx.get(f"{url}/sessions/s1", headers=admin).status_code == 404


def test_an_invalid_agent_card_is_one_line_naming_the_field(
    desk: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    async def card(request: Request) -> JSONResponse:
        return JSONResponse({"description": "a card without a name", "url": "http://127.0.0.1:1"})

    url, _ = desk
    with serve_app(Starlette(routes=[Route(CARD_PATH, card)])) as nameless:
        assert main(["agents", "add", nameless, "--gateway", url]) == 1
    err = capsys.readouterr().err
    assert f"{nameless} answered an invalid agent card: name: Field required" in err
    assert len(err.splitlines()) == 1 and "pydantic" not in err and "validation error" not in err
