"""A card and every URL a server gives out name the server's own address, never the request's ``Host`` header."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from agent_server import create_app
from agent_server.testing import scripted_agent
from gateway.service import create_gateway_app
from tests.support.gateway_service import triage_service
from tests.support.servers import serve_app

EVIL = {"host": "evil.example:666", "A2A-Version": "1.0"}


@pytest.fixture(scope="module", params=["agent server", "gateway"])
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    app = create_app(scripted_agent()) if request.param == "agent server" else create_gateway_app(triage_service())
    with serve_app(app) as served:
        yield served


def test_the_card_names_the_servers_own_address_whatever_host_the_request_says(url: str) -> None:
    card = httpx.get(f"{url}/.well-known/agent-card.json", headers=EVIL)
    assert card.status_code == 200
    urls = [interface["url"] for interface in card.json()["supportedInterfaces"]]
    assert urls and all(u.startswith(url) for u in urls), urls
    assert "evil.example" not in card.text


def test_a_path_with_a_trailing_slash_is_not_redirected_to_the_requests_host(url: str) -> None:
    answer = httpx.post(f"{url}/tasks/send/", headers=EVIL, json={})
    assert answer.status_code in (404, 405)
    assert "location" not in answer.headers
