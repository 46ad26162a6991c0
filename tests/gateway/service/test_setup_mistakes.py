"""What a newcomer's first hour hit (issue 15), each against real servers on loopback; each failed before the fix.

The README's snippets are run by tests/e2e/test_readme.py.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agent_server import HostedAgent, TaskContext, create_app
from gateway.config.load import load_config
from gateway.service import create_gateway_app
from tests.support.gateway_service import agent_server, gateway_server, lines_of, triage_service
from tests.support.servers import serve_app
from tests.support.waiting import PROCESS_S

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "support" / "openai_payloads"


class FakeOpenAI:
    """An OpenAI-compatible endpoint: answers with a recorded stream, or 401 when ``key`` is set and not sent."""

    def __init__(self, key: str | None = None) -> None:
        self.key = key
        self.authorizations: list[str | None] = []

    def app(self) -> Starlette:
        async def completions(request: Request) -> Response:
            sent = request.headers.get("authorization")
            self.authorizations.append(sent)
            if self.key is not None and sent != f"Bearer {self.key}":
                return JSONResponse(_error_401(), status_code=401)
            return Response((FIXTURES / "stream_text.sse").read_bytes(), media_type="text/event-stream")

        return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


def _error_401() -> dict[str, object]:
    return {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}


@contextmanager
def gateway_on(tmp_path: Path, agent_toml: str) -> Iterator[str]:
    config = tmp_path / "gw.toml"
    config.write_text(f'[stores]\nsessions = "memory"\nevents = "memory"\n\n[[agents]]\nname = "triage"\n{agent_toml}')
    with serve_app(create_gateway_app(load_config(config))) as url:
        yield url


def test_a_refused_key_names_the_variable_the_configuration_gave_and_logs_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("FAKE_KEY", "sk-wrong")
    fake = FakeOpenAI(key="sk-right")
    with serve_app(fake.app()) as endpoint:
        agent = f'model = "openai:gpt-4o-mini"\nbase_url = "{endpoint}/v1"\napi_key_env = "FAKE_KEY"\n'
        with gateway_on(tmp_path, agent) as url, caplog.at_level(logging.INFO):
            answer = httpx.post(f"{url}/sessions/k1/messages", json={"message": "hi", "stream": False}, timeout=30)
    assert fake.authorizations == ["Bearer sk-wrong"]
    message = answer.json()["error"]["message"]
    assert answer.status_code == 502 and "refused the API key (401)" in message
    assert "check the key in the environment variable FAKE_KEY" in message and "OPENAI_API_KEY" not in message
    failures = [r for r in caplog.records if r.name == "gateway.service" and "failed" in r.getMessage()]
    assert len(failures) == 1 and failures[0].exc_info is None, "one line, no traceback"


def test_a_keyless_endpoint_needs_no_api_key_env_and_is_sent_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``OPENAI_API_KEY`` goes to OpenAI's endpoint only: an endpoint named by base_url gets the key it is given."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-meant-for-openai")
    fake = FakeOpenAI()
    with serve_app(fake.app()) as endpoint:
        with gateway_on(tmp_path, f'model = "openai:llama3"\nbase_url = "{endpoint}/v1"\n') as url:
            answer = httpx.post(f"{url}/sessions/k2/messages", json={"message": "hi", "stream": False}, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json()["content"].startswith("Your")
    assert fake.authorizations == [None]


def test_a_tool_added_through_the_api_is_attached_to_the_starting_agent_unless_told(scripted_url: str) -> None:
    with gateway_server(triage_service()) as url:
        default = httpx.post(f"{url}/tools", json={"name": "ask", "agent": scripted_url}, timeout=10).json()
        alone = httpx.post(f"{url}/tools", json={"name": "alone", "agent": scripted_url, "attach_to": []}, timeout=10)
        tools = httpx.get(f"{url}/agents/triage", timeout=10).json()["tools"]
    assert default["used_by"] == ["triage"]
    assert alone.json()["used_by"] == []
    assert "ask" in tools and "alone" not in tools


@pytest.fixture(scope="module")
def scripted_url() -> Iterator[str]:
    with agent_server() as url:
        yield url


def _echo() -> HostedAgent:
    async def echo(ctx: TaskContext) -> str:
        return ctx.text

    return HostedAgent("echo", echo, description="Repeats the text of the message it receives.")


@pytest.mark.parametrize("registry", ["memory", "sqlite"])
def test_after_a_restart_a_session_held_by_an_agent_no_longer_registered_goes_back_to_the_starting_agent(
    tmp_path: Path, registry: str
) -> None:
    """docs/gateway-service.md: with a memory registry, agents added through the API are lost at a restart, and
    their sessions go back; with the default (the sessions' SQLite file) the agent is back and keeps its session.

    Even where the gateway may still connect to the agent's host (here ``allowed_agent_hosts``): it is not
    connected again by the URL the session stored, since nobody registered it in this process.
    """
    config = tmp_path / "gw.toml"
    config.write_text(
        f'[gateway]\ndata_dir = "{tmp_path}"\n[stores]\nsessions = "sqlite"\nevents = "sqlite"\n'
        f'registry = "{registry}"\n[security]\nallowed_agent_hosts = ["127.0.0.1"]\n'
    )
    with serve_app(create_app(_echo())) as echo_url:
        with serve_app(create_gateway_app(load_config(config))) as url:
            assert httpx.post(f"{url}/agents", json={"url": echo_url}, timeout=10).status_code == 201
            first = lines_of(
                httpx.post(f"{url}/sessions/r1/messages", json={"message": "please echo this"}, timeout=30)
            )
            assert first[-1]["active_agent_name"] == "echo"
        with serve_app(create_gateway_app(load_config(config))) as url:
            again = lines_of(httpx.post(f"{url}/sessions/r1/messages", json={"message": "hello"}, timeout=30))
            listed = [agent["name"] for agent in httpx.get(f"{url}/agents", timeout=10).json()["agents"]]
    changed = [e for e in again if e["type"] == "agent_changed"]
    if registry == "sqlite":
        assert "echo" in listed and not changed
        assert again[-1]["type"] == "run_completed" and again[-1]["active_agent_name"] == "echo"
        assert again[-1]["content"] == "hello"
        return
    assert "echo" not in listed
    assert changed and changed[0]["previous"] == "echo" and changed[0]["agent"] == "assistant"
    assert changed[0]["cause"] == "not_registered"
    assert again[-1]["type"] == "run_completed" and again[-1]["active_agent_name"] == "assistant"
    docs = " ".join((ROOT / "docs" / "gateway-service.md").read_text().split())
    assert "a session whose active agent is gone after a restart goes back to the starting agent" in docs


def test_an_mcp_stdio_command_written_with_its_arguments_is_told_about_args() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "call", "mcp+stdio:python examples/mcp_weather_server.py#forecast", "Paris"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
    )
    assert done.returncode == 1
    assert "arguments go in the query" in done.stderr
    assert "mcp+stdio:python?args=examples/mcp_weather_server.py#forecast" in done.stderr
