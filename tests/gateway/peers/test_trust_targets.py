"""Where the gateway may be sent: no command from the network, only allowed hosts, no redirects, credentials kept.

Every test runs real servers on loopback. A listener on 127.0.0.2 (outside every allowlist
here) proves that nothing was contacted: a connection attempt would wait in its backlog.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_server import Handoff, HostedAgent, TaskContext, TextChunk, create_app
from gateway import Agent, Gateway, HostAllowlist, MemoryEventLog, MemorySessionStore
from gateway.service import GatewayService, RemoteSpec
from tests.support.gateway_service import error_of, gateway_server, lines_of
from tests.support.servers import serve_app


@contextmanager
def outside_listener() -> Iterator[tuple[str, socket.socket]]:
    """A port on 127.0.0.2 that accepts connections into its backlog; yields its ``host:port``."""
    listener = socket.socket()
    listener.bind(("127.0.0.2", 0))
    listener.listen(16)
    try:
        yield f"127.0.0.2:{listener.getsockname()[1]}", listener
    finally:
        listener.close()


def contacted(listener: socket.socket) -> bool:
    listener.setblocking(False)
    try:
        connection, _ = listener.accept()
    except BlockingIOError:
        return False
    connection.close()
    return True


def _front(targets: dict[str, str]) -> HostedAgent:
    """Hands off to the URI its message names (a key of ``targets``)."""

    async def front(ctx: TaskContext) -> AsyncIterator[Any]:
        yield "Passing you on. "
        yield Handoff(targets[ctx.text.split()[0]], "the user asked")

    return HostedAgent("front", front, description="Sends people elsewhere.")


def _remote_first(url: str) -> GatewayService:
    return GatewayService(
        starting_agent_name="front",
        remotes=[RemoteSpec(url, "front")],
        session_store=MemorySessionStore(),
        event_log=MemoryEventLog(),
    )


def test_no_form_of_an_mcp_stdio_target_through_the_api_starts_a_process(
    tmp_path: Path, triage_gateway_url: str
) -> None:
    marker = tmp_path / "pwned"
    command = f"mcp+stdio:touch?args={marker}#x"
    with httpx.Client(base_url=triage_gateway_url, timeout=10) as http:
        refusals = [
            http.post("/tools", json={"name": "p", "agent": command}),
            http.post("/tools", json={"name": "p", "agent": command, "attach_to": ["triage"]}),
            http.post("/tools", json={"name": "p", "agent": f"MCP+STDIO:touch?args={marker}#x"}),
            http.post("/agents", json={"url": command}),
            http.post("/tools", content=b'{"name": "p", "agent": "%s"}' % command.encode()),
            http.post("/tools", json={"name": "p", "agent": command}, headers={"origin": "http://evil.example"}),
        ]
        assert [r.status_code for r in refusals] == [403, 403, 403, 403, 415, 403]
        assert "configuration file" in error_of(refusals[0])["message"]
        called = http.post("/tools/p/call", json={"input": {}})
        assert called.status_code == 404
        chat = http.post("/sessions/s/messages", json={"message": "please use the p tool"})
        assert lines_of(chat)[-1]["type"] == "run_completed"
        assert http.get("/tools").json() == {"tools": []}
        assert http.get("/agents/triage").json()["tools"] == []
    assert not marker.exists()


@pytest.mark.parametrize("kind", ["http", "mcp"])
def test_a_remote_agents_handoff_to_a_host_outside_the_allowlist_is_refused_and_nothing_is_contacted(kind: str) -> None:
    with outside_listener() as (hostport, listener):
        targets = {"http": f"http://{hostport}", "mcp": f"mcp+http://{hostport}/mcp#tool"}
        with (
            serve_app(create_app(_front(targets))) as front_url,
            gateway_server(_remote_first(front_url)) as url,
            httpx.Client(base_url=url, timeout=10) as http,
        ):
            events = lines_of(http.post("/sessions/s/messages", json={"message": kind}))
        [refused] = [e for e in events if e["type"] == "handoff_refused"]
        assert (refused["cause"], refused["target"]) == ("host_not_allowed", targets[kind])
        assert "allowed_agent_hosts" in refused["detail"]
        assert events[-1]["type"] == "run_completed" and events[-1]["active_agent_name"] == "front"
        assert not contacted(listener)


def _redirecting() -> Starlette:
    async def redirect(request: Request) -> RedirectResponse:
        return RedirectResponse(f"http://{request.app.state.target}{request.url.path}", status_code=307)

    return Starlette(routes=[Route("/{path:path}", redirect, methods=["GET", "POST"])])


def test_a_redirect_is_reported_and_not_followed(triage_gateway_url: str) -> None:
    app = _redirecting()
    with outside_listener() as (hostport, listener), serve_app(app) as redirect_url:
        app.state.target = hostport
        with httpx.Client(base_url=triage_gateway_url, timeout=10) as http:
            response = http.post("/agents", json={"url": redirect_url})
            assert response.status_code == 502
            error = error_of(response)
            assert error["data"]["reason"] == "redirect"
            assert f"a redirect to http://{hostport}/.well-known/agent-card.json" in error["message"]
            assert [a["name"] for a in http.get("/agents").json()["agents"]] == ["triage"]
        assert not contacted(listener)


class _HeaderLog:
    """ASGI wrapper that writes down the Authorization header of every request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[str | None] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append(dict(scope["headers"]).get(b"authorization", b"").decode() or None)
        await self.app(scope, receive, send)


def _speaker(name: str) -> HostedAgent:
    async def speak(ctx: TaskContext) -> AsyncIterator[Any]:
        yield TextChunk(f"{name} here.")

    return HostedAgent(name, speak, description=f"The {name} desk.")


def test_an_agents_token_goes_to_that_agent_only_and_is_never_shown(triage_gateway_url: str) -> None:
    secret = "billing-s3cret-token"
    open_desk = _HeaderLog(create_app(_speaker("tech")))
    with (
        serve_app(create_app(_speaker("billing"), token=secret)) as billing_url,
        serve_app(open_desk) as tech_url,
        httpx.Client(base_url=triage_gateway_url, timeout=10) as http,
    ):
        assert http.post("/tools", json={"name": "no_token", "agent": billing_url}).status_code == 201
        refused = http.post("/tools/no_token/call", json={"input": "hello"})
        assert refused.status_code == 502 and "HTTP 401" in error_of(refused)["message"]
        created = http.post("/agents", json={"url": billing_url, "token": secret})
        assert created.status_code == 201 and created.json()["authenticated"] is True
        assert http.post("/agents", json={"url": tech_url}).status_code == 201
        tool = http.post("/tools", json={"name": "ask_billing", "agent": billing_url, "token": secret})
        assert tool.status_code == 201 and tool.json()["authenticated"] is True
        for question in ("I need a refund", "my app crashes, technical problem"):
            events = lines_of(http.post("/sessions/s-token/messages", json={"message": question}))
            assert events[-1]["type"] == "run_completed", events[-1]
        called = http.post("/tools/ask_billing/call", json={"input": "hello"})
        assert called.status_code == 200 and called.json()["result"]["text"] == "billing here."
        shown = [http.get(path).text for path in ("/agents", "/tools", "/sessions/s-token", "/runs")]
        runs = [run["run_id"] for run in http.get("/runs").json()["runs"]]
        shown += [http.get(f"/runs/{run_id}/events").text for run_id in runs]
        assert open_desk.seen and all(header is None for header in open_desk.seen)
    assert not any(secret in text for text in shown)


def test_a_token_env_through_the_api_is_refused(triage_gateway_url: str) -> None:
    with httpx.Client(base_url=triage_gateway_url, timeout=10) as http:
        response = http.post("/tools", json={"name": "leak", "agent": "http://127.0.0.1:9", "token_env": "HOME"})
        assert response.status_code == 400 and "only the configuration file" in error_of(response)["message"]


@pytest.mark.parametrize(("card_name", "name"), [("Ünïcode 日本", None), ("desk", "日本語")])
def test_agent_names_outside_latin_1_are_registered_with_a_percent_encoded_location(
    card_name: str, name: str | None, triage_gateway_url: str
) -> None:
    with (
        serve_app(create_app(_speaker(card_name))) as agent_url,
        httpx.Client(base_url=triage_gateway_url, timeout=10) as http,
    ):
        body = {"url": agent_url, **({"name": name} if name else {})}
        created = http.post("/agents", json=body)
        assert created.status_code == 201, created.text
        expected = name or card_name
        assert created.headers["location"].isascii() and "%" in created.headers["location"]
        assert http.get(created.headers["location"]).json()["name"] == expected
        assert http.delete(created.headers["location"]).status_code == 200


def test_an_agent_card_over_its_limit_is_refused_and_nothing_is_registered(triage_gateway_url: str) -> None:
    huge = HostedAgent("huge", _speaker("huge").handler, description="x" * (300 * 1024))
    with (
        serve_app(create_app(huge)) as agent_url,
        httpx.Client(base_url=triage_gateway_url, timeout=10) as http,
    ):
        response = http.post("/agents", json={"url": agent_url})
        assert response.status_code == 502
        assert error_of(response)["data"]["reason"] == "answer_too_large"
        assert "more than 262144 bytes" in error_of(response)["message"]
        assert [a["name"] for a in http.get("/agents").json()["agents"]] == ["triage"]


def test_registration_by_url_still_works_on_the_scripted_agent(triage_gateway_url: str, scripted_url: str) -> None:
    """The refusals above are specific: a plain agent registers and answers."""
    with httpx.Client(base_url=triage_gateway_url, timeout=10) as http:
        assert http.post("/agents", json={"url": scripted_url, "name": "helper"}).status_code == 201


def test_with_an_explicit_allowlist_the_api_registers_agents_only_on_those_hosts(scripted_url: str) -> None:
    service = GatewayService(
        Agent("triage"),
        gateway=Gateway(event_log=MemoryEventLog(), allowed_hosts=HostAllowlist(["127.0.0.3:*", "*.internal:443"])),
        session_store=MemorySessionStore(),
    )
    with gateway_server(service) as url, httpx.Client(base_url=url, timeout=10) as http:
        for path, body in (("/agents", {"url": scripted_url}), ("/tools", {"name": "t", "agent": scripted_url})):
            response = http.post(path, json=body)
            assert response.status_code == 403, response.text
            assert "127.0.0.3:*, *.internal:443" in error_of(response)["message"]
        assert [a["name"] for a in http.get("/agents").json()["agents"]] == ["triage"]
        assert http.get("/tools").json() == {"tools": []}


@pytest.mark.parametrize("token", ["\u202egnp.exe", "with space", "tab\there", ""])
def test_a_token_a_header_cannot_carry_is_refused_before_anything_is_registered(
    token: str, triage_gateway_url: str, scripted_url: str
) -> None:
    with httpx.Client(base_url=triage_gateway_url, timeout=10) as http:
        for path, body in (
            ("/agents", {"url": scripted_url, "token": token}),
            ("/tools", {"name": "t", "agent": scripted_url, "token": token}),
        ):
            response = http.post(path, json=body)
            assert response.status_code == 400, response.text
        assert [a["name"] for a in http.get("/agents").json()["agents"]] == ["triage"]
        assert http.get("/tools").json() == {"tools": []}
