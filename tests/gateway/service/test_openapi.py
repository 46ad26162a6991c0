"""``GET /openapi.json``: the gateway's API as an OpenAPI 3.1 document made from the routes the app serves."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.routing import Route

from agent_server import Principal, TokenTable
from gateway.service import create_gateway_app
from tests.support.gateway_service import triage_service
from tests.support.servers import serve_app

TOKENS = TokenTable({"alice-secret": Principal("alice", "chat")})


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Any, dict[str, Any]]]:
    app = create_gateway_app(triage_service(), tokens=TOKENS)
    with serve_app(app) as url:
        answer = httpx.get(f"{url}/openapi.json", timeout=30)  # no token: it holds no data
        assert answer.status_code == 200, answer.text
        yield app, answer.json()


def test_every_route_the_app_serves_is_in_the_document(served: tuple[Any, dict[str, Any]]) -> None:
    app, document = served
    assert document["openapi"] == "3.1.0" and document["info"]["title"] == "switchboard"
    for route in app.routes:
        if isinstance(route, Route) and route.methods:
            path = re.sub(r"\{([^}:]+)(:[^}]+)?\}", r"{\1}", route.path)
            for method in route.methods - {"HEAD"}:
                assert method.lower() in document["paths"].get(path, {}), (method, path)


def test_bodies_are_the_models_the_routes_read_and_tokens_are_said(served: tuple[Any, dict[str, Any]]) -> None:
    _, document = served
    register = document["paths"]["/agents"]["post"]
    schema = register["requestBody"]["content"]["application/json"]["schema"]
    assert schema["required"] == ["url"] and {"url", "name", "token", "max_cost_usd"} <= set(schema["properties"])
    assert register["security"] == [{"bearer": []}]
    message = document["paths"]["/sessions/{session_id}/messages"]["post"]
    assert "message" in message["requestBody"]["content"]["application/json"]["schema"]["properties"]
    assert [p["name"] for p in message["parameters"]] == ["session_id"]
    assert "security" not in document["paths"]["/health"]["get"], "liveness needs no token"
    assert document["paths"]["/runs/{run_id}/cancel"]["post"]["summary"].startswith("End a run going on")
