"""Every client command sends a token (``--token`` or ``$SWITCHBOARD_GATEWAY_TOKEN``) and says which to set.

Run on a pseudo-terminal, as a person runs them, against a gateway (and an agent) with tokens on loopback.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from agent_server import Principal, TokenTable, create_app
from agent_server.testing import scripted_agent
from gateway.cli.client import GATEWAY_TOKEN_ENV
from gateway.service import RemoteSpec, create_gateway_app
from tests.support.gateway_service import agent_server, billing_agent, triage_service
from tests.support.servers import serve_app
from tests.support.terminal import Terminal

ADMIN, ALICE = "admin-secret-token", "alice-secret-token"
TOKENS = TokenTable({ADMIN: Principal("root", "admin"), ALICE: Principal("alice", "chat")})
NEEDS_TOKEN = rf"this needs a token: pass --token TOKEN or set {GATEWAY_TOKEN_ENV}"


@pytest.fixture(autouse=True)
def _no_token_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(GATEWAY_TOKEN_ENV, raising=False)


@pytest.fixture(scope="module")
def locked_gateway() -> Iterator[str]:
    """Triage with a remote billing agent, behind tokens: an admin's and alice's (chat scope)."""
    with agent_server(billing_agent()) as billing_url:
        service = triage_service(remotes=(RemoteSpec(billing_url, "billing", handoff_from=("triage",)),))
        with serve_app(create_gateway_app(service, tokens=TOKENS)) as url:
            yield url


def test_chat_without_a_token_says_which_option_to_set_and_with_one_it_talks(locked_gateway: str) -> None:
    with Terminal("chat", "--gateway", locked_gateway, "--session", "t1") as terminal:
        terminal.expect("you> ")
        terminal.send("hello")
        terminal.expect(r"the gateway answered 401: .*" + NEEDS_TOKEN)
        terminal.send("/quit")
        assert terminal.wait() == 1
    with Terminal("chat", "--gateway", locked_gateway, "--session", "t1", "--token", ALICE) as terminal:
        terminal.expect("you> ")
        terminal.send("hello")
        terminal.expect("triage> ")
        terminal.expect("you> ")
        terminal.send("/quit")
        assert terminal.wait() == 0


def test_events_reads_the_token_from_the_environment(locked_gateway: str, monkeypatch: pytest.MonkeyPatch) -> None:
    answer = httpx.post(
        f"{locked_gateway}/sessions/t2/messages",
        json={"message": "hello", "stream": False},
        headers={"authorization": f"Bearer {ALICE}"},
        timeout=30,
    )
    run_id = answer.headers["x-run-id"]
    with Terminal("events", run_id, "--gateway", locked_gateway) as terminal:
        terminal.expect(NEEDS_TOKEN)
        assert terminal.wait() == 1
    monkeypatch.setenv(GATEWAY_TOKEN_ENV, ALICE)
    with Terminal("events", run_id, "--gateway", locked_gateway) as terminal:
        terminal.expect("triage")
        assert terminal.wait() == 0
    with Terminal("events", "--all", "--gateway", locked_gateway, "--token", "wrong-token-here") as terminal:
        terminal.expect(r"the gateway answered 401")
        assert terminal.wait() == 1


def test_a_chat_token_cannot_register_and_is_told_it_needs_another(locked_gateway: str) -> None:
    with Terminal("agents", "remove", "billing", "--gateway", locked_gateway, "--token", ALICE) as terminal:
        terminal.expect(rf"the gateway answered 403: .*pass another one with --token TOKEN or {GATEWAY_TOKEN_ENV}")
        assert terminal.wait() == 1


def test_call_sends_the_token_to_an_agent_that_needs_one(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_app(create_app(scripted_agent("locked"), token=ALICE)) as url:
        with Terminal("call", url, "echo hi") as terminal:
            terminal.expect(r"the call failed .*" + NEEDS_TOKEN)
            assert terminal.wait() == 1
        monkeypatch.setenv(GATEWAY_TOKEN_ENV, ALICE)
        with Terminal("call", url, "echo hi") as terminal:
            terminal.expect("hi")
            assert terminal.wait() == 0
        monkeypatch.delenv(GATEWAY_TOKEN_ENV)
        with Terminal("call", url, "echo hi", "--token", ALICE) as terminal:
            terminal.expect("hi")
            assert terminal.wait() == 0
