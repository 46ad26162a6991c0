"""From a checked configuration to a GatewayService: stores opened, models made, agents and tools wired.

Everything that can still fail on the machine (an API key variable that is not set, a
Python tool that does not import) is tried before any store is opened, and reported as
a ConfigError naming the key, like the file's own mistakes.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

from protocol import dotted_path

from ..config import AgentConfig, ConfigError, GatewayConfig, Problem, is_python_ref
from ..event_log import EventLog, open_event_log
from ..gateway import Gateway
from ..models import ChatModel, OfflineModel, OpenAIChatModel
from ..swarm import (
    Agent,
    FullHistory,
    MemorySessionStore,
    SessionStore,
    SQLiteSessionStore,
    StructuredHistory,
    SummaryHistory,
)
from .core import Closer, GatewayService, RemoteSpec, define_tool

_HISTORY: dict[str, type[Any]] = {"full": FullHistory, "summary": SummaryHistory, "structured": StructuredHistory}


def build_service(config: GatewayConfig, origin: str = "configuration") -> GatewayService:
    """The service ``config`` describes; remote agents are connected (cards fetched) when it starts."""
    python_tools = _python_tools(config, origin)
    models, closers = _models(config, origin)
    event_log = _event_log(config)
    session_store = _session_store(config)
    gateway = Gateway(event_log=event_log)
    for spec in config.tools:
        define_tool(gateway, spec)
    local: dict[str, Agent] = {}
    for agent in config.agents:
        if not agent.is_remote:
            tools = [gateway.tools[name] if name in gateway.tools else python_tools[name] for name in agent.tools]
            local[agent.name] = Agent(
                agent.name, agent.instructions, models[agent.name], tools, description=agent.description
            )
    remotes = [
        RemoteSpec(agent.url, agent.name, agent.description, tuple(_sources(config, agent.name, local)))
        for agent in config.agents
        if agent.url is not None
    ]
    for agent in config.agents:
        if not agent.is_remote:
            for target in agent.handoffs:
                if target in local:
                    local[agent.name].add_handoff(local[target])
    starting = local.get(config.starting_agent)
    return GatewayService(
        starting,
        agents=list(local.values()),
        remotes=remotes,
        starting_agent_name=config.starting_agent,
        gateway=gateway,
        session_store=session_store,
        event_log=event_log,
        max_handoffs_per_turn=config.limits.max_handoffs_per_turn,
        max_tool_iterations=config.limits.max_tool_iterations,
        history_policy=_HISTORY[config.swarm.history](),
        name=config.gateway.name,
        description=config.gateway.description,
        closers=closers,
        startup_wait_s=config.gateway.startup_wait_secs,
    )


def store_spec(config: GatewayConfig, spec: str, default_file: str) -> str:
    """``memory`` or ``sqlite:PATH`` (``sqlite`` alone becomes a file under ``data_dir``, created if needed)."""
    path = config.store_path(spec, default_file)
    if path is None:
        return "memory"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:{path}"


def _event_log(config: GatewayConfig) -> EventLog:
    return open_event_log(store_spec(config, config.stores.events, "events.db"))


def _session_store(config: GatewayConfig) -> SessionStore:
    spec = store_spec(config, config.stores.sessions, "sessions.db")
    return MemorySessionStore() if spec == "memory" else SQLiteSessionStore(spec.removeprefix("sqlite:"))


def _sources(config: GatewayConfig, name: str, local: dict[str, Agent]) -> list[str]:
    """The local agents whose ``handoffs`` name the remote agent ``name``."""
    return [agent.name for agent in config.agents if agent.name in local and name in agent.handoffs]


def _models(config: GatewayConfig, origin: str) -> tuple[dict[str, ChatModel], list[Closer]]:
    models: dict[str, ChatModel] = {}
    closers: list[Closer] = []
    problems: list[Problem] = []
    for index, agent in enumerate(config.agents):
        if agent.is_remote:
            continue
        try:
            model = _model(agent)
        except ValueError as exc:
            problems.append(Problem(origin, dotted_path(("agents", index, "api_key_env")), str(exc)))
            continue
        models[agent.name] = model
        if isinstance(model, OpenAIChatModel):
            closers.append(model.aclose)
    if problems:
        raise ConfigError(problems)
    return models, closers


def _model(agent: AgentConfig) -> ChatModel:
    if agent.model == "offline":
        return OfflineModel()
    api_key: str | None = None
    if agent.api_key_env is not None:
        api_key = os.environ.get(agent.api_key_env)
        if not api_key:
            raise ValueError(f"the environment variable {agent.api_key_env} is not set (it should hold the API key)")
    return OpenAIChatModel(agent.model.removeprefix("openai:"), base_url=agent.base_url, api_key=api_key)


def _python_tools(config: GatewayConfig, origin: str) -> dict[str, Any]:
    """Import every ``package.module:function`` a local agent names as a tool."""
    found: dict[str, Any] = {}
    problems: list[Problem] = []
    for index, agent in enumerate(config.agents):
        for position, name in enumerate(agent.tools):
            if name in found or any(tool.name == name for tool in config.tools) or not is_python_ref(name):
                continue
            try:
                found[name] = _import(name)
            except (ImportError, AttributeError) as exc:
                key = dotted_path(("agents", index, "tools", position))
                problems.append(Problem(origin, key, f"cannot import {name!r}: {exc}"))
    if problems:
        raise ConfigError(problems)
    return found


def _import(ref: str) -> Any:
    module_name, _, attribute = ref.partition(":")
    if str(Path.cwd()) not in sys.path and "" not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    return target
