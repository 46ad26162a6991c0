"""A refusal made before any binding read the request (no token, a browser origin) answers in that binding's shape.

Under ``/a2a/rest`` a client reads every error as a ``google.rpc.Status``; the JSON-RPC and
NDJSON routes keep the shared error body their clients read. Both servers: an agent server
with a token, and the gateway with its token table.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from agent_server import Principal, TokenTable, create_app
from agent_server.testing import scripted_agent
from gateway.service import create_gateway_app
from protocol import REST_PATH
from tests.support.gateway_service import triage_service
from tests.support.servers import serve_app

TOKEN = "shape-secret"
V1 = {"a2a-version": "1.0"}


@pytest.fixture(scope="module", params=["server", "gateway"])
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "server":
        app = create_app(scripted_agent(), token=TOKEN)
    else:
        app = create_gateway_app(triage_service(), tokens=TokenTable({TOKEN: Principal("alice", "chat")}))
    with serve_app(app) as base:
        yield base


def _status_of(response: httpx.Response, code: int, status: str) -> str:
    """The google.rpc.Status body's message, once its code, status and ErrorInfo are checked."""
    assert response.status_code == code, response.text
    assert response.headers["content-type"].startswith("application/a2a+json")
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (code, status)
    info = error["details"][0]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo" and info["reason"] == status
    message: str = error["message"]
    return message


@pytest.mark.parametrize("path", ["/message:send", "/tasks/t1", "/extendedAgentCard", "/no/such/operation"])
def test_no_token_on_the_http_json_binding_is_a_status_body(url: str, path: str) -> None:
    with httpx.Client(base_url=url + REST_PATH, timeout=10, headers=V1) as http:
        missing = http.request("POST" if path == "/message:send" else "GET", path, json={})
        assert "Authorization: Bearer" in _status_of(missing, 401, "UNAUTHENTICATED")
        assert missing.headers["www-authenticate"] == 'Bearer realm="switchboard"'
        wrong = http.get(path, headers={"authorization": "Bearer wrong"})
        assert "not valid" in _status_of(wrong, 401, "UNAUTHENTICATED")
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]


def test_a_refused_browser_origin_on_the_http_json_binding_is_a_status_body(url: str) -> None:
    headers = {**V1, "authorization": f"Bearer {TOKEN}", "origin": "http://evil.example"}
    refused = httpx.get(f"{url}{REST_PATH}/tasks/t1", headers=headers, timeout=10)
    assert "allowed_origins" in _status_of(refused, 403, "PERMISSION_DENIED")


def test_json_rpc_and_ndjson_refusals_keep_the_shared_body(url: str) -> None:
    with httpx.Client(base_url=url, timeout=10) as http:
        for response in (
            http.post("/", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t1"}}),
            http.post("/tasks/get", json={"id": "t1"}),
            http.get("/tasks/t1"),
        ):
            assert response.status_code == 401, response.text
            assert response.json() == {"error": {"code": -32600, "message": response.json()["error"]["message"]}}
            assert response.headers["content-type"].startswith("application/json")


def test_with_the_token_the_http_json_binding_answers(url: str) -> None:
    headers = {**V1, "authorization": f"Bearer {TOKEN}"}
    missing = httpx.get(f"{url}{REST_PATH}/tasks/none", headers=headers, timeout=10)
    assert missing.status_code == 404 and missing.json()["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
