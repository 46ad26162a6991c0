"""Model names resolve through providers: offline, PROVIDER:MODEL, plain OpenAI-style names through
the OpenAI-compatible provider (OPENAI_BASE_URL / OPENAI_API_KEY or a providers table), with an
error that says what to set; and the OpenAI-compatible path end to end, against a real HTTP
server on loopback that answers the way OpenAI's API does."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway import Agent, Runner, tool
from gateway.config.load import load_config
from gateway.errors import ModelNotConfigured
from gateway.models import OfflineModel, OpenAIChatModel, Providers, ProviderSettings, parse_model_name
from gateway.models.providers import ModelName
from gateway.service import create_gateway_app
from tests.support.openai_endpoint import completion, openai_endpoint
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).resolve().parents[2] / "support" / "openai_payloads"
TABLE = {"ollama": ProviderSettings(base_url="http://127.0.0.1:11434/v1", api_key_env="OLLAMA_KEY")}


def test_names_parse_into_provider_and_model() -> None:
    assert parse_model_name("offline") == ModelName("offline", "")
    assert parse_model_name("gpt-4o") == ModelName("openai", "gpt-4o")
    assert parse_model_name("gemini-2.5-flash") == ModelName("openai", "gemini-2.5-flash")
    assert parse_model_name("openai:gpt-4o-mini") == ModelName("openai", "gpt-4o-mini")
    assert parse_model_name("llama3.1:8b") == ModelName("openai", "llama3.1:8b")
    assert parse_model_name("ollama:qwen2:7b", TABLE) == ModelName("ollama", "qwen2:7b")
    with pytest.raises(ValueError, match=r"unknown provider 'olama' .* define \[providers.olama\]"):
        parse_model_name("olama:llama3")
    with pytest.raises(ValueError, match="not a model name"):
        parse_model_name("gpt 4o")
    with pytest.raises(ValueError, match="names no model"):
        parse_model_name("openai:")


def test_each_form_resolves_to_its_model() -> None:
    environ = {"OPENAI_API_KEY": "sk-real", "OLLAMA_KEY": "ollama-key"}
    providers = Providers(TABLE, environ=environ)
    assert isinstance(providers.chat_model("offline"), OfflineModel)
    plain = providers.chat_model("gpt-4o")
    assert isinstance(plain, OpenAIChatModel)
    assert (plain.model, plain.base_url, plain.api_key_env) == ("gpt-4o", "https://api.openai.com/v1", "OPENAI_API_KEY")
    assert providers.chat_model("gpt-4o") is plain
    local = providers.chat_model("ollama:llama3.1")
    assert isinstance(local, OpenAIChatModel)
    assert (local.model, local.base_url, local.api_key_env) == ("llama3.1", "http://127.0.0.1:11434/v1", "OLLAMA_KEY")
    elsewhere = Providers(environ={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}).chat_model("gemini-2.5-flash")
    assert isinstance(elsewhere, OpenAIChatModel)
    assert (elsewhere.base_url, elsewhere.api_key_env) == ("http://127.0.0.1:9/v1", "OPENAI_API_KEY")


def test_a_provider_without_a_key_never_gets_the_openai_key() -> None:
    providers = Providers(
        {"local": ProviderSettings(base_url="http://127.0.0.1:8000/v1")}, environ={"OPENAI_API_KEY": "sk"}
    )
    model = providers.chat_model("local:phi3")
    assert isinstance(model, OpenAIChatModel) and (model.api_key_env, model._api_key) == (None, None)
    own = providers.chat_model("gpt-4o", base_url="http://127.0.0.1:8001/v1")
    assert isinstance(own, OpenAIChatModel) and own.api_key_env is None, "a base_url alone is keyless"


def test_an_unconfigured_name_says_exactly_what_to_set() -> None:
    providers = Providers(environ={})
    with pytest.raises(ModelNotConfigured) as caught:
        providers.chat_model("gpt-4o")
    message = str(caught.value)
    for needed in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "[providers.openai]", "'offline'"):
        assert needed in message
    assert Providers(TABLE, environ={}).problem("ollama:llama3") == (
        "model 'ollama:llama3' runs at provider 'ollama', whose key is read from OLLAMA_KEY, "
        "and that variable is not set"
    )
    assert providers.problem("gpt-4o", own_endpoint=True) is None
    with pytest.raises(ValueError, match="needs a base_url"):
        Providers({"vllm": ProviderSettings()})


async def test_a_swarm_agent_named_gpt_4o_without_a_provider_fails_before_the_run_starts() -> None:
    billing = Agent("Billing", model="gpt-4o")
    triage = Agent("Triage", handoffs=[billing])
    runner = Runner(triage, providers=Providers(environ={}))
    with pytest.raises(ModelNotConfigured, match=r"^agent 'Billing': model 'gpt-4o' runs at an OpenAI-compatible"):
        await runner.run_async("s", "hello")
    assert (await runner.session_store.load("s")).version == 0
    assert await runner.event_log.list_runs() == []


async def test_agent_model_gpt_4o_runs_against_an_openai_compatible_endpoint_named_by_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @tool
    def lookup_order(order_id: str) -> str:
        """Look an order up."""
        return f"{order_id} shipped yesterday"

    with openai_endpoint() as endpoint:
        monkeypatch.setenv("OPENAI_BASE_URL", endpoint.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
        endpoint.replies += [
            completion(tool_calls=[("call_1", "lookup_order", '{"order_id":"ORD-1234"}')]),
            completion("Your order ORD-1234 shipped yesterday."),
        ]
        agent = Agent(
            name="Support",
            instructions="You answer order questions.",
            model="gpt-4o",
            functions=[lookup_order],
            tool_choice="auto",
            parallel_tool_calls=False,
        )
        response = await Runner(agent).run_async("s", "Where is ORD-1234?")

    assert response.content == "Your order ORD-1234 shipped yesterday."
    first, second = endpoint.bodies("/v1/chat/completions")
    assert (first["model"], first["tool_choice"], first["parallel_tool_calls"]) == ("gpt-4o", "auto", False)
    assert [t["function"]["name"] for t in first["tools"]] == ["lookup_order"]
    assert first["messages"][0] == {"role": "system", "content": "You answer order questions."}
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "ORD-1234 shipped yesterday"}
    assert {h["authorization"] for h in endpoint.headers("/v1/chat/completions")} == {"Bearer sk-loopback"}


def test_a_provider_of_the_table_and_the_blocking_run_which_closes_its_clients() -> None:
    with openai_endpoint() as endpoint:
        endpoint.replies += [completion("first"), completion("second")]
        providers = Providers({"local": ProviderSettings(base_url=endpoint.url)}, environ={})
        agent = Agent("Local", model="local:llama3.1")
        runner = Runner(agent, providers=providers)
        assert runner.run("s", "one").content == "first"
        assert runner.run("s", "two").content == "second"  # a new event loop: the client was closed and reopened
        model = providers.chat_model("local:llama3.1")
        assert isinstance(model, OpenAIChatModel) and model._client is None
    assert [b["model"] for b in endpoint.bodies("/v1/chat/completions")] == ["llama3.1", "llama3.1"]
    assert all("authorization" not in h for h in endpoint.headers("/v1/chat/completions"))


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
