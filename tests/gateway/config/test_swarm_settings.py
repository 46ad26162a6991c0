"""The swarm's new settings in the configuration: model names and [providers], [router], [swarm]
fallback, agents' examples, the blackboard's tools and store; each mistake named by its key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.blackboard import SQLiteBoardStore
from gateway.config.load import load_config, validate_config
from gateway.errors import ConfigError
from gateway.models import OpenAIChatModel
from gateway.service import build_service
from gateway.swarm import Agent, SemanticRouter

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)


def _config(tmp_path: Path, **sections: Any) -> Any:
    data: dict[str, Any] = {
        "gateway": {"data_dir": str(tmp_path)},
        "stores": {"sessions": "memory", "events": "memory"},
    }
    data.update(sections)
    return validate_config(data, "gw.toml")


def _build_problems(config: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        build_service(config, "gw.toml")
    return str(caught.value).splitlines()


def test_a_plain_model_name_without_a_provider_is_refused_at_start_saying_what_to_set(tmp_path: Path) -> None:
    config = _config(tmp_path, agents=[{"name": "a", "model": "gpt-4o"}])
    [problem] = _build_problems(config)
    assert problem.startswith("gw.toml: agents[0].model: model 'gpt-4o' runs at an OpenAI-compatible provider")
    assert "set OPENAI_API_KEY" in problem and "[providers.openai]" in problem


async def test_providers_of_the_table_serve_their_models(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        providers={"openai": {"base_url": "http://127.0.0.1:9/v1"}, "ollama": {"base_url": "http://127.0.0.1:8/v1"}},
        agents=[{"name": "a", "model": "gpt-4o", "handoffs": ["b"]}, {"name": "b", "model": "ollama:llama3.1"}],
    )
    service = build_service(config, "gw.toml")
    async with service:
        agents = service.members.local_agents()
        a, b = agents["a"].get_model(), agents["b"].get_model()
        assert isinstance(a, OpenAIChatModel) and (a.model, a.base_url) == ("gpt-4o", "http://127.0.0.1:9/v1")
        assert isinstance(b, OpenAIChatModel) and (b.model, b.base_url) == ("llama3.1", "http://127.0.0.1:8/v1")


def test_unknown_providers_and_providers_without_an_endpoint_are_named(tmp_path: Path) -> None:
    path = tmp_path / "gw.toml"
    path.write_text(
        '[providers.vllm]\napi_key_env = "VLLM_KEY"\n\n'
        '[router]\nembedder = "nope:embed"\n\n'
        '[[agents]]\nname = "a"\nmodel = "olama:llama3"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    problems = str(caught.value).splitlines()
    assert problems[0] == f"{path}: providers.vllm.base_url: is required (the provider's OpenAI-compatible endpoint)"
    assert problems[1].startswith(f"{path}: agents[0].model: unknown provider 'olama' in model 'olama:llama3'")
    assert problems[2].startswith(f"{path}: router.embedder: unknown provider 'nope'")


def test_the_fallback_names_current_human_or_an_agent(tmp_path: Path) -> None:
    agents = [{"name": "triage"}, {"name": "supervisor"}]
    assert _config(tmp_path, agents=agents).swarm.fallback == "current"
    assert _config(tmp_path, agents=agents, swarm={"fallback": "supervisor"}).swarm.fallback == "supervisor"
    with pytest.raises(ConfigError, match=r"swarm.fallback: no agent named 'boss' \(expected current, human or an"):
        _config(tmp_path, agents=agents, swarm={"fallback": "boss"})


async def test_router_examples_fallback_and_blackboard_reach_the_service(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        swarm={"fallback": "human"},
        router={"embedder": "offline", "threshold": 0.8},
        stores={"sessions": "memory", "events": "memory", "blackboard": f"sqlite:{tmp_path / 'b.db'}"},
        agents=[
            {"name": "triage", "handoffs": ["billing"], "tools": ["blackboard_read", "blackboard_write"]},
            {"name": "billing", "instructions": "You do refunds.", "examples": ["I want a refund for my order"]},
        ],
    )
    service = build_service(config, "gw.toml")
    assert isinstance(service.blackboard.store, SQLiteBoardStore)
    async with service:
        runner = service.runner
        assert runner.fallback == "human"
        assert isinstance(runner.router, SemanticRouter) and runner.router.threshold == 0.8
        triage = runner.agents["triage"]
        assert isinstance(triage, Agent)
        assert [t.name for t in triage.tools] == ["blackboard_read", "blackboard_write"]
        response = await runner.run_async("s", "refund my order please")
    assert response.active_agent_name == "billing"
    assert response.events_of("router_decision")[0].fields["decision"] == "route"
    assert (tmp_path / "b.db").exists()


def test_examples_belong_to_local_agents_and_are_bounded(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="takes no examples"):
        _config(tmp_path, agents=[{"name": "r", "url": "http://127.0.0.1:9", "examples": ["hi"]}])
    with pytest.raises(ConfigError, match=r"agents\[0\].examples"):
        _config(tmp_path, agents=[{"name": "a", "examples": ["x"] * 101}])
