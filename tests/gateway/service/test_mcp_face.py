"""``/mcp``: the swarm as an MCP server, reached with the MCP SDK's own client behind the gateway's tokens.

A gateway on loopback with a local offline triage agent in front, and a scripted agent server
behind its agent tools. What it must show: the tools are the starting agent and the agent tools
(read live), a call of the starting agent answers and goes on in its session, a streamed tool
call sends progress notifications, an MCP cancel (on either wire) ends the run with
``run_cancelled`` in the caller's name, and the route asks for a token like every other.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import orjson
import pytest
from mcp import MCPError

from agent_server import Principal, TokenTable
from gateway import Agent, Gateway
from gateway.service import GatewayService, create_gateway_app
from tests.support.gateway_service import agent_server
from tests.support.mcp_clients import gateway_mcp
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio

ALICE, BOB, ROOT = "alice-secret", "bob-secret", "root-secret"
TOKENS = TokenTable({ALICE: Principal("alice", "chat"), BOB: Principal("bob", "chat"), ROOT: Principal("root")})
ASK = "ask_switchboard"


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    with agent_server() as url:  # the scripted agent: "stream N INTERVAL" streams N chunks
        yield url


@pytest.fixture(scope="module")
def gateway(agent_url: str) -> Iterator[str]:
    """Triage in front (the offline model), one streaming agent tool as configured."""
    calls = Gateway()
    calls.add_agent_tool("scripted", agent_url, mode="streaming")
    service = GatewayService(Agent("triage", "Route customers to the right specialist."), gateway=calls)
    with serve_app(create_gateway_app(service, tokens=TOKENS)) as url:
        yield url


def _http(url: str, token: str = ALICE) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"}, timeout=30)


def _run_events(url: str, run_id: str, token: str = ALICE) -> list[dict[str, Any]]:
    with _http(url, token) as http, http.stream("GET", f"/runs/{run_id}/events", params={"follow": 1}) as response:
        return [orjson.loads(line) for line in response.iter_lines() if line]


async def test_the_tools_are_the_starting_agent_and_the_agent_tools_read_live(gateway: str, agent_url: str) -> None:
    async with gateway_mcp(gateway, ALICE) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert names == [ASK, "scripted"]
        with _http(gateway, ROOT) as root:
            assert root.post("/tools", json={"name": "late", "agent": agent_url}).status_code == 201
        try:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        finally:
            with _http(gateway, ROOT) as root:
                assert root.delete("/tools/late").status_code == 200
    assert list(listed) == [ASK, "scripted", "late"]
    assert listed[ASK].input_schema["required"] == ["message"]
    assert listed["late"].input_schema["required"] == ["input"]


async def test_the_starting_agent_answers_and_goes_on_in_its_session(gateway: str) -> None:
    async with gateway_mcp(gateway, ALICE) as client:
        first = await client.call_tool(ASK, {"message": "hello there"})
        assert not first.is_error, first
        assert first.structured_content is not None
        session_id = first.structured_content["session_id"]
        assert first.content[0].text == first.structured_content["answer"]  # type: ignore[union-attr]
        second = await client.call_tool(ASK, {"message": "and again", "session_id": session_id})
    assert not second.is_error and second.structured_content is not None
    assert second.structured_content["session_id"] == session_id
    with _http(gateway) as http:
        session = http.get(f"/sessions/{session_id}").json()
    said = [entry["content"] for entry in session["history"] if entry["role"] == "user"]
    assert said == ["hello there", "and again"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_streamed_tool_call_sends_progress_notifications(gateway: str, mode: str) -> None:
    said: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        said.append((progress, message))

    async with gateway_mcp(gateway, ALICE, mode) as client:
        result = await client.call_tool("scripted", {"input": "stream 3 0.02"}, progress_callback=on_progress)
    assert not result.is_error, result
    assert result.content[0].text == "chunk-0 chunk-1 chunk-2 "  # type: ignore[union-attr]
    assert [message for _, message in said] == ["chunk-0 ", "chunk-1 ", "chunk-2 "]
    assert [progress for progress, _ in said] == [1, 2, 3]
    assert result.structured_content is not None and result.structured_content["cost_usd"] == pytest.approx(0.003)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_mcp_cancel_ends_the_run_in_the_callers_name(gateway: str, mode: str) -> None:
    started = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    async with gateway_mcp(gateway, BOB, mode) as client, anyio.create_task_group() as tasks:

        async def call() -> None:
            await client.call_tool("scripted", {"input": "stream 1000 0.05"}, progress_callback=on_progress)

        tasks.start_soon(call)
        with anyio.fail_after(30):
            await started.wait()
        tasks.cancel_scope.cancel()
    with _http(gateway, BOB) as http:
        run_id = http.get("/runs", params={"limit": 1}).json()["runs"][0]["run_id"]
    events = await anyio.to_thread.run_sync(_run_events, gateway, run_id, BOB)
    types = [event["type"] for event in events]
    assert types[-2:] == ["run_cancelled", "agent_tool_terminated"], types
    assert events[-2]["by"] == "bob"
    assert events[-1]["reason"] == "cancelled"


def test_without_a_token_the_route_is_401_and_an_mcp_session_is_its_callers(gateway: str) -> None:
    refused = httpx.post(f"{gateway}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert refused.status_code == 401
    assert "needs a token" in refused.json()["error"]["message"]
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    accept = {"accept": "application/json, text/event-stream"}
    with _http(gateway, ALICE) as alice, _http(gateway, BOB) as bob:
        opened = alice.post("/mcp", json=initialize, headers=accept)
        assert opened.status_code == 200, opened.text
        session = {**accept, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        assert bob.post("/mcp", json=listing, headers=session).status_code == 404, "bob cannot use alice's session"
        assert alice.delete("/mcp", headers=session).status_code == 200


def test_a_body_over_the_gateways_limit_is_413(gateway: str) -> None:
    huge = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"padding": "x" * (1 << 20)}}
    with _http(gateway) as http:
        refused = http.post("/mcp", json=huge, headers={"accept": "application/json, text/event-stream"})
    assert refused.status_code == 413


async def test_the_sdk_client_without_a_token_is_refused(gateway: str) -> None:
    with pytest.raises(ExceptionGroup) as raised:  # the SDK's task group carries the refusal
        async with gateway_mcp(gateway, None) as client:
            await client.list_tools()
    assert raised.group_contains(MCPError)


async def test_bad_arguments_and_an_unknown_tool_say_what_to_fix(gateway: str) -> None:
    async with gateway_mcp(gateway, ALICE) as client:
        missing = await client.call_tool(ASK, {})
        bad_session = await client.call_tool(ASK, {"message": "hi", "session_id": "no spaces allowed"})
        with pytest.raises(MCPError, match="no tool named 'nope'"):
            await client.call_tool("nope", {"input": "x"})
    assert missing.is_error and "'message' must be a non-empty string" in missing.content[0].text  # type: ignore[union-attr]
    assert bad_session.is_error and "is not valid" in bad_session.content[0].text  # type: ignore[union-attr]


def test_a_gateway_loads_the_mcp_sdk_with_the_first_request_to_mcp_not_at_start() -> None:
    script = textwrap.dedent(
        """
        import sys
        from starlette.testclient import TestClient
        from gateway.service import GatewayService, create_gateway_app
        with TestClient(create_gateway_app(GatewayService())) as http:
            assert http.get("/health").status_code == 200
            before = "mcp" in sys.modules
            http.post("/mcp", json={})
        print(before, "mcp" in sys.modules)
        """
    )
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert loaded.stdout.split() == ["False", "True"]
