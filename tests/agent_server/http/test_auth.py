"""Tokens, scopes and owners on both servers, and the browser rules, against real servers on loopback."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from starlette.routing import Mount, Route

from agent_server import Principal, TokenTable, create_app
from agent_server.testing import scripted_agent
from gateway.config.load import load_config
from gateway.service import create_gateway_app
from tests.support.gateway_service import error_of, lines_of, triage_service
from tests.support.servers import serve_app

ADMIN, ALICE, BOB = "admin-secret", "alice-secret", "bob-secret"
TOKENS = TokenTable(
    {ADMIN: Principal("ops", "admin"), ALICE: Principal("alice", "chat"), BOB: Principal("bob", "chat")}
)
PUBLIC = {
    ("GET", path)
    for path in (
        *("/health", "/ready", "/openapi.json", "/.well-known/agent.json", "/.well-known/agent-card.json"),
        *("/ui", "/ui/", "/ui/console.js", "/ui/console.css"),
    )
}
"""The console's files hold no data: the page sends the token the user gives it (docs/console.md)."""


def _as(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def gateway_app() -> object:
    return create_gateway_app(triage_service(), tokens=TOKENS)


@pytest.fixture(scope="module")
def gateway(gateway_app: object) -> Iterator[str]:
    with serve_app(gateway_app) as url:
        yield url


def _requests_for_every_route(app: object) -> list[tuple[str, str]]:
    """One request per method of every route in the app's table, path parameters filled in."""
    requests: list[tuple[str, str]] = []
    for route in app.routes:  # type: ignore[attr-defined]
        if isinstance(route, Mount):  # an app of its own under the path (a proxied agent): each binding's entry
            base = re.sub(r"\{[^}]+\}", "x", route.path)
            requests += [("POST", base + "/tasks/send"), ("GET", base + "/tasks/x"), ("POST", base + "/a2a/rest/x")]
            continue
        assert isinstance(route, Route), route
        path = re.sub(r"\{[^}]+\}", "x", route.path)
        for method in sorted(route.methods or {"GET", "POST", "DELETE"}):
            if method != "HEAD":
                requests.append((method, path))
    return requests


def test_every_gateway_route_but_health_and_the_card_needs_a_token(gateway_app: object, gateway: str) -> None:
    requests = _requests_for_every_route(gateway_app)
    assert len(requests) >= 15
    with httpx.Client(base_url=gateway, timeout=10) as http:
        for method, path in requests:
            for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": f"Basic {ALICE}"}):
                response = http.request(method, path, headers=headers, json={})
                if (method, path) in PUBLIC:
                    assert response.status_code == 200, (method, path, response.text)
                    continue
                assert response.status_code == 401, (method, path, headers, response.text)
                assert response.headers["www-authenticate"].startswith('Bearer realm="switchboard"')
                assert "Authorization: Bearer" in error_of(response)["message"]
        assert http.get("/agents", headers=_as(ALICE)).status_code == 200


def test_every_agent_server_route_but_the_card_needs_its_token() -> None:
    app = create_app(scripted_agent(), token="agent-secret")
    with serve_app(app) as url, httpx.Client(base_url=url, timeout=10) as http:
        for method, path in _requests_for_every_route(app):
            response = http.request(method, path, json={"message": {"parts": [{"text": "echo hi"}]}})
            if (method, path) in PUBLIC:
                assert response.status_code == 200
                card = response.json()
                scheme = card["securitySchemes"]["bearer"]
                assert scheme["type"] == "http" and scheme["scheme"] == "bearer"  # A2A v0.3's spelling
                assert scheme["httpAuthSecurityScheme"] == {"scheme": "bearer"}  # and v1.0's
                assert card["security"] == [{"bearer": []}]
                assert card["securityRequirements"] == [{"schemes": {"bearer": {"list": []}}}]
                continue
            assert response.status_code == 401, (method, path, response.text)
            assert "www-authenticate" in response.headers
        sent = http.post("/tasks/send", json={"message": {"parts": [{"text": "echo hi"}]}}, headers=_as("agent-secret"))
        assert sent.status_code == 200 and sent.json()["status"]["state"] == "completed"


def test_a_chat_token_cannot_change_the_swarm(gateway: str, scripted_url: str) -> None:
    with httpx.Client(base_url=gateway, timeout=10, headers=_as(ALICE)) as http:
        for method, path, body in [
            ("POST", "/agents", {"url": scripted_url}),
            ("DELETE", "/agents/triage", None),
            ("POST", "/tools", {"name": "t", "agent": scripted_url}),
            ("DELETE", "/tools/t", None),
        ]:
            response = http.request(method, path, json=body)
            assert response.status_code == 403, (method, path, response.text)
            assert "needs an admin token" in error_of(response)["message"]
        assert http.get("/agents").json()["starting_agent"] == "triage"
        assert http.get("/tools").json() == {"tools": []}
    with httpx.Client(base_url=gateway, timeout=10, headers=_as(ADMIN)) as http:
        created = http.post("/agents", json={"url": scripted_url, "name": "helper"})
        assert created.status_code == 201, created.text
        assert http.delete("/agents/helper").status_code == 200


def test_sessions_and_runs_belong_to_the_token_that_started_them(gateway: str) -> None:
    with (
        httpx.Client(base_url=gateway, timeout=10, headers=_as(ALICE)) as alice,
        httpx.Client(base_url=gateway, timeout=10, headers=_as(BOB)) as bob,
        httpx.Client(base_url=gateway, timeout=10, headers=_as(ADMIN)) as admin,
    ):
        turn = alice.post("/sessions/owned/messages", json={"message": "hello"})
        assert turn.status_code == 200 and lines_of(turn)[-1]["type"] == "run_completed"
        run_id = turn.headers["x-run-id"]

        assert alice.get("/sessions/owned").json()["history"][0]["content"] == "hello"
        for response in (
            bob.get("/sessions/owned"),
            bob.delete("/sessions/owned"),
            bob.post("/sessions/owned/messages", json={"message": "let me in"}),
            bob.get(f"/runs/{run_id}/events"),
        ):
            assert response.status_code == 404, response.text
        assert run_id not in [run["run_id"] for run in bob.get("/runs").json()["runs"]]
        assert run_id in [run["run_id"] for run in alice.get("/runs").json()["runs"]]
        assert "owned" not in [s["session_id"] for s in bob.get("/sessions").json()["sessions"]]
        assert "owned" in [s["session_id"] for s in alice.get("/sessions").json()["sessions"]]
        assert bob.put("/sessions/owned/agent", json={"agent": "triage"}).status_code == 404
        assert alice.put("/sessions/owned/agent", json={"agent": "nobody"}).status_code == 404
        assert alice.put("/sessions/owned/agent", json={"agents": "triage"}).status_code == 400
        handed = alice.put("/sessions/owned/agent", json={"agent": "triage"})
        assert handed.status_code == 200 and handed.json()["active_agent"] == "triage"

        assert admin.get("/sessions/owned").status_code == 200
        assert lines_of(admin.get(f"/runs/{run_id}/events"))[0]["type"] == "run_started"
        assert run_id in [run["run_id"] for run in admin.get("/runs").json()["runs"]]
        history = alice.get("/sessions/owned").json()["history"]
        assert [m["content"] for m in history if m["role"] == "user"] == ["hello"]


def test_tasks_of_the_gateways_own_binding_belong_to_their_token_too(gateway: str) -> None:
    with (
        httpx.Client(base_url=gateway, timeout=10, headers=_as(ALICE)) as alice,
        httpx.Client(base_url=gateway, timeout=10, headers=_as(BOB)) as bob,
    ):
        sent = alice.post(
            "/tasks/send", json={"id": "alice-task", "sessionId": "alice-chat", "message": {"parts": [{"text": "hi"}]}}
        )
        assert sent.status_code == 200 and sent.json()["status"]["state"] == "completed", sent.text
        assert alice.get("/tasks/alice-task").status_code == 200
        assert error_of(bob.get("/tasks/alice-task"))["code"] == -32001
        assert error_of(bob.post("/tasks/cancel", json={"id": "alice-task"}))["code"] == -32001
        taken = bob.post("/tasks/send", json={"id": "alice-task", "message": {"parts": [{"text": "hi"}]}})
        assert taken.status_code == 409
        # the swarm session behind alice's task is hers: bob's task on it fails without reading it
        sneaky = bob.post("/tasks/send", json={"sessionId": "alice-chat", "message": {"parts": [{"text": "hi"}]}})
        assert sneaky.json()["status"]["state"] == "failed"
        assert "no session 'alice-chat'" in sneaky.json()["status"]["message"]["parts"][0]["text"]
        assert bob.get("/sessions/alice-chat").status_code == 404
        assert alice.get("/sessions/alice-chat").status_code == 200


def test_the_admin_token_comes_from_the_environment_and_named_tokens_from_the_configuration(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_file = tmp_path / "gateway.toml"  # type: ignore[operator]
    config_file.write_text(
        '[stores]\nsessions = "memory"\nevents = "memory"\n'
        '[[security.tokens]]\nname = "carol"\nscope = "chat"\ntoken_env = "CAROL_TOKEN"\n'
    )
    monkeypatch.setenv("SWITCHBOARD_ADMIN_TOKEN", "root-token")
    monkeypatch.setenv("CAROL_TOKEN", "carol-token")
    app = create_gateway_app(load_config(config_file))
    with serve_app(app) as url, httpx.Client(base_url=url, timeout=10) as http:
        assert http.get("/agents").status_code == 401
        assert http.get("/agents", headers=_as("root-token")).status_code == 200
        assert (
            http.post(
                "/tools", json={"name": "x", "agent": "http://127.0.0.1:9"}, headers=_as("carol-token")
            ).status_code
            == 403
        )
        turn = http.post("/sessions/c/messages", json={"message": "hi"}, headers=_as("carol-token"))
        assert turn.status_code == 200


def test_a_named_token_whose_variable_is_unset_stops_the_start(tmp_path: object) -> None:
    config_file = tmp_path / "gateway.toml"  # type: ignore[operator]
    config_file.write_text('[[security.tokens]]\nname = "dave"\ntoken_env = "DAVE_TOKEN_NOT_SET"\n')
    with pytest.raises(
        ValueError, match=r"security.tokens\[0\].token_env: the environment variable DAVE_TOKEN_NOT_SET is not set"
    ):
        create_gateway_app(load_config(config_file))


def test_a_web_page_of_another_origin_is_refused_and_gets_no_cors_headers(
    scripted_url: str, triage_gateway_url: str
) -> None:
    with httpx.Client(base_url=triage_gateway_url, timeout=10) as http:
        page = {"origin": "http://evil.example"}
        for response in (
            http.get("/health", headers=page),
            http.post("/tools", json={"name": "p", "agent": scripted_url}, headers=page),
            http.options("/tools", headers={**page, "access-control-request-method": "POST"}),
        ):
            assert response.status_code == 403, response.text
            assert "access-control-allow-origin" not in response.headers
            assert "allowed_origins" in error_of(response)["message"]
        assert http.get("/tools").json() == {"tools": []}
    refused = httpx.post(
        f"{scripted_url}/tasks/send", json={"message": {"parts": [{"text": "echo x"}]}}, headers={"origin": "null"}
    )
    assert refused.status_code == 403


def test_the_consoles_own_origin_is_accepted_on_loopback_only(triage_gateway_url: str) -> None:
    """A page on the gateway's own loopback address may call it; a rebound name (its own ``Host``) may not."""
    with httpx.Client(base_url=triage_gateway_url, timeout=10) as http:
        own = http.get("/agents", headers={"origin": triage_gateway_url})
        assert own.status_code == 200, own.text
        port = triage_gateway_url.rsplit(":", 1)[1]
        for host, origin in (
            (f"evil.example:{port}", f"http://evil.example:{port}"),  # DNS rebinding: the page's name arrives as Host
            (f"127.0.0.1:{port}", f"http://evil.example:{port}"),
        ):
            refused = http.get("/agents", headers={"origin": origin, "host": host})
            assert refused.status_code == 403, (host, origin, refused.text)


def test_an_allowed_origin_gets_cors_headers() -> None:
    console = "http://console.example:3000"
    app = create_gateway_app(triage_service(), allowed_origins=[console])
    with serve_app(app) as url, httpx.Client(base_url=url, timeout=10) as http:
        preflight = http.options(
            "/sessions/s/messages", headers={"origin": console, "access-control-request-method": "POST"}
        )
        assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == console
        health = http.get("/health", headers={"origin": console})
        assert health.status_code == 200 and health.headers["access-control-allow-origin"] == console
        assert http.get("/health", headers={"origin": "http://other.example"}).status_code == 403


def test_a_gateway_post_without_a_json_content_type_is_refused(scripted_url: str, triage_gateway_url: str) -> None:
    with httpx.Client(base_url=triage_gateway_url, timeout=10) as http:
        bare = http.post("/tools", content=b'{"name": "p", "agent": "%s"}' % scripted_url.encode())
        assert bare.status_code == 415 and "Content-Type" in error_of(bare)["message"]
        form = http.post("/sessions/s/messages", content=b"message=hi", headers={"content-type": "text/plain"})
        assert form.status_code == 415
        assert http.get("/tools").json() == {"tools": []}
