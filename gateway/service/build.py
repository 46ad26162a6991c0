"""From a checked configuration to a GatewayService: stores opened, models made, agents and tools wired.

Everything that can still fail on the machine (an API key or token variable that is not
set, a model name no provider serves, a Python tool that does not import, a store path
under a file) is checked at once before
any store is opened (``check_machine``, also what ``switchboard gateway --check`` runs), and
reported as a ConfigError naming the key, like the file's own mistakes. A store that
still cannot be opened is a ConfigError too, and what was opened before it is closed.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from agent_server.bindings import grpc_installed
from agent_server.http.auth import Principal, TokenTable, token_problem
from agent_server.http.speedups import not_installed
from agent_server.stores import parse_store_spec
from agent_server.stores.spec import REDIS_SCHEMES
from gateway.blackboard import Blackboard, blackboard_tools, open_board_store
from gateway.calls.coordinator import Gateway
from gateway.config.model import ADMIN_TOKEN_ENV, BLACKBOARD_TOOLS, AgentConfig, GatewayConfig
from gateway.config.python_refs import import_python_ref, is_python_ref
from gateway.errors import ConfigError, Problem
from gateway.event_log import EventLog, open_event_log
from gateway.event_log.retention import Retention
from gateway.limits.counters import MemoryCounters, Window
from gateway.limits.quotas import Quotas, TokenLimits
from gateway.models import ChatModel, Providers
from gateway.peers.allowed_hosts import HostAllowlist
from gateway.registrations import RegistryStore, open_registry
from gateway.service.core import Closer, GatewayService
from gateway.service.members import RemoteSpec
from gateway.swarm import (
    Agent,
    FullHistory,
    MemorySessionStore,
    SemanticRouter,
    SessionStore,
    SQLiteSessionStore,
    StructuredHistory,
    SummaryHistory,
)
from protocol import dotted_path

_HISTORY: dict[str, type[Any]] = {"full": FullHistory, "summary": SummaryHistory, "structured": StructuredHistory}


def check_machine(config: GatewayConfig, origin: str = "configuration") -> list[Problem]:
    """What the file cannot tell but this machine can, all at once; nothing is created or opened.

    Every Python tool must import, every ``api_key_env`` and ``token_env`` variable must be
    set, every model name must have its provider configured, every SQLite store must
    be a file that can be created (no file where a directory should be), and the event loop
    and HTTP parser named must be installed. ``switchboard gateway --check`` reports these,
    and ``build_service`` refuses to start on them.
    """
    return _checked(config, origin)[1]


def _checked(config: GatewayConfig, origin: str) -> tuple[dict[str, Any], list[Problem]]:
    """The Python tools, imported, and every problem ``check_machine`` reports."""
    python_tools, problems = _python_tools(config, origin)
    for check in (_env_problems, _model_problems, _store_problems, _server_problems, _face_problems):
        problems += check(config, origin)
    return python_tools, problems


def gateway_tokens(config: GatewayConfig, origin: str = "configuration") -> TokenTable:
    """Who may call the gateway: ``SWITCHBOARD_ADMIN_TOKEN`` (principal ``admin``) and each ``[[security.tokens]]``."""
    tokens: dict[str, Principal] = {}
    admin = os.environ.get(ADMIN_TOKEN_ENV)
    if admin:
        tokens[admin.strip()] = Principal("admin", "admin")
    for index, entry in enumerate(config.security.tokens):
        value = os.environ.get(entry.token_env, "").strip()
        if not value:
            key = dotted_path(("security", "tokens", index, "token_env"))
            raise ConfigError([Problem(origin, key, f"the environment variable {entry.token_env} is not set")])
        if value in tokens:
            key = dotted_path(("security", "tokens", index, "token_env"))
            raise ConfigError([Problem(origin, key, f"{entry.token_env} holds the same token as another entry")])
        tokens[value] = Principal(entry.name, entry.scope)
    return TokenTable(tokens)


def build_service(config: GatewayConfig, origin: str = "configuration") -> GatewayService:
    """The service ``config`` describes; remote agents are connected (cards fetched) when it starts.

    Raises ConfigError with every problem ``check_machine`` finds, or naming the store that
    cannot be opened; whatever was opened before is closed again.
    """
    python_tools, problems = _checked(config, origin)
    if problems:
        raise ConfigError(problems)
    session_store = _session_store(config, origin)
    try:
        event_log = _event_log(config, origin)
    except BaseException:
        _close_unstarted(session_store.close)
        raise
    try:
        blackboard = Blackboard(_open_store(config, origin, "blackboard", open_board_store))
    except BaseException:
        _close_unstarted(session_store.close)
        _close_unstarted(event_log.aclose)
        raise
    try:
        registry = _registry(config, origin)
    except BaseException:
        _close_unstarted(session_store.close)
        _close_unstarted(event_log.aclose)
        _close_unstarted(blackboard.close)
        raise
    quotas = token_quotas(config)
    providers = Providers(config.provider_table())
    models = _models(config, providers)
    board_tools = {tool.name: tool for tool in blackboard_tools(blackboard)}
    assert set(board_tools) == set(BLACKBOARD_TOOLS)
    gateway = Gateway(
        event_log=event_log,
        limits=config.peers.limits(),
        allowed_hosts=HostAllowlist(config.security.allowed_agent_hosts),
    )
    for spec in config.tools:
        gateway.add_tool(spec.agent_tool(_token(spec.token_env)))
    local: dict[str, Agent] = {}
    for agent in config.agents:
        if not agent.is_remote:
            tools = [
                gateway.tool_function(name)
                if name in gateway.tools
                else board_tools[name]
                if name in board_tools
                else python_tools[name]
                for name in agent.tools
            ]
            local[agent.name] = Agent(
                agent.name,
                agent.instructions,
                models[agent.name],
                tools,
                description=agent.description,
                examples=agent.examples,
            )
    remotes = [
        RemoteSpec(
            agent.url,
            agent.name,
            agent.description,
            tuple(_sources(config, agent.name, local)),
            _token(agent.token_env),
            agent.max_cost_usd,
        )
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
        history_policy=_HISTORY[config.swarm.history](window=config.swarm.history_window),
        name=config.gateway.name,
        description=config.gateway.description,
        closers=[providers.aclose, quotas.counters.aclose],
        startup_wait_s=config.gateway.startup_wait_secs,
        resolve_uris=config.swarm.resolve_uris,
        blackboard=blackboard,
        registry=registry,
        fallback=config.swarm.fallback,
        router=_router(config, providers),
        providers=providers,
        quotas=quotas,
    )


def token_quotas(config: GatewayConfig) -> Quotas:
    """The limits of ``[[security.tokens]]``, counted in Redis when the events are there (replicas share them)."""
    limits = {
        entry.name: TokenLimits(entry.rate_per_minute, entry.max_spend_usd, Window[entry.spend_window.upper()])
        for entry in config.security.tokens
    }
    spec = str(config.stores.events)
    if any(limit != TokenLimits() for limit in limits.values()) and spec.lower().startswith(REDIS_SCHEMES):
        from gateway.limits.redis import RedisCounters

        return Quotas(limits, RedisCounters(spec, settings=config.stores.redis.settings()))
    return Quotas(limits, MemoryCounters())


_STORES = {
    "sessions": "sessions.db",
    "events": "events.db",
    "tasks": "tasks.db",
    "blackboard": "boards.db",
    "registry": "sessions.db",
}
_Store = TypeVar("_Store")


def store_spec(config: GatewayConfig, spec: str, default_file: str) -> str:
    """``memory``, ``sqlite:PATH`` (``sqlite`` alone becomes a file under ``data_dir``, created if needed) or Redis.

    A directory that cannot be created is an OSError; ``build_service`` checks first (``check_machine``).
    """
    kind, path = parse_store_spec(spec, default_path=Path(config.gateway.data_dir) / default_file)
    if kind == "redis":
        return spec
    if kind == "memory" or path is None:
        return "memory"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:{path}"


def task_store_spec(config: GatewayConfig, origin: str = "configuration") -> str:
    """The spec of the binding's task store (``stores.tasks``), its folder created; a ConfigError when it cannot be."""
    return _open_store(config, origin, "tasks", lambda spec: spec)


def _spec_of(config: GatewayConfig, store: str) -> str:
    """The spec of ``store`` as configured (the registry's default: the sessions')."""
    return config.stores.registry_spec if store == "registry" else str(getattr(config.stores, store))


def _store_key(config: GatewayConfig, store: str) -> str:
    """The key to blame for a store's path: ``gateway.data_dir`` for plain ``sqlite``, else the store's own."""
    if _spec_of(config, store) == "sqlite":
        return "gateway.data_dir"
    return "stores.sessions" if store == "registry" and config.stores.registry is None else f"stores.{store}"


def _store_problems(config: GatewayConfig, origin: str) -> list[Problem]:
    """A SQLite store whose folder cannot exist: something on its path that is not a directory."""
    problems: list[Problem] = []
    checked: set[str] = set()
    for store, default_file in _STORES.items():
        path = config.store_path(_spec_of(config, store), default_file)
        if path is None or path in checked:
            continue
        checked.add(path)
        target = Path(path)
        if target.is_dir():
            problems.append(Problem(origin, _store_key(config, store), f"{path} is a directory, not a database file"))
            continue
        for folder in target.parents:
            if folder.exists():
                if not folder.is_dir():
                    reason = f"cannot put {store} store {path} there: {folder} is a file, not a directory"
                    problems.append(Problem(origin, _store_key(config, store), reason))
                break
    return problems


def _open_store(config: GatewayConfig, origin: str, store: str, open_: Callable[[str], _Store]) -> _Store:
    key = _store_key(config, store)
    try:
        return open_(store_spec(config, _spec_of(config, store), _STORES[store]))
    except (OSError, ValueError, sqlite3.Error) as exc:
        raise ConfigError([Problem(origin, key, f"cannot open the {store} store: {exc}")]) from None


def _event_log(config: GatewayConfig, origin: str) -> EventLog:
    retention = Retention.configured(config.stores.events_retention_days, config.stores.events_max_runs)

    def open_(spec: str) -> EventLog:
        if spec.lower().startswith(REDIS_SCHEMES):
            from gateway.event_log.redis import RedisEventLog

            return RedisEventLog(spec, settings=config.stores.redis.settings(), retention=retention)
        return open_event_log(spec, synchronous=config.stores.events_synchronous, retention=retention)

    return _open_store(config, origin, "events", open_)


def _registry(config: GatewayConfig, origin: str) -> RegistryStore:
    redis = config.stores.redis.settings()
    return _open_store(config, origin, "registry", lambda spec: open_registry(spec, redis=redis))


def _session_store(config: GatewayConfig, origin: str) -> SessionStore:
    def open_(spec: str) -> SessionStore:
        if spec == "memory":
            return MemorySessionStore()
        if spec.lower().startswith(REDIS_SCHEMES):
            from gateway.swarm.sessions.redis import RedisSessionStore

            return RedisSessionStore(spec, settings=config.stores.redis.settings())
        return SQLiteSessionStore(spec.removeprefix("sqlite:"))

    return _open_store(config, origin, "sessions", open_)


def _close_unstarted(close: Closer) -> None:
    """Close a part from sync code (no event loop yet): the stores' closers finish without waiting on anything."""
    coroutine = close()
    try:
        coroutine.send(None)
    except StopIteration:
        return
    except Exception:
        return
    coroutine.close()


def _sources(config: GatewayConfig, name: str, local: dict[str, Agent]) -> list[str]:
    """The local agents whose ``handoffs`` name the remote agent ``name``."""
    return [agent.name for agent in config.agents if agent.name in local and name in agent.handoffs]


def _server_problems(config: GatewayConfig, origin: str) -> list[Problem]:
    """The event loop and the HTTP parser the file names must be installed."""
    problems = []
    for key, choice in (("gateway.loop", config.gateway.loop), ("gateway.http", config.gateway.http)):
        missing = not_installed(choice)
        if missing is not None:
            problems.append(Problem(origin, key, missing))
    return problems


def _face_problems(config: GatewayConfig, origin: str) -> list[Problem]:
    """What the swarm's A2A face offers must be servable: an extended card needs tokens, gRPC its extra."""
    problems = []
    has_tokens = bool(os.environ.get(ADMIN_TOKEN_ENV, "").strip()) or bool(config.security.tokens)
    if config.gateway.extended_card is not None and not has_tokens:
        reason = (
            f"an extended card is for callers with a token, and the gateway has none: "
            f"set {ADMIN_TOKEN_ENV} or add [[security.tokens]]"
        )
        problems.append(Problem(origin, "gateway.extended_card", reason))
    if config.gateway.grpc_port is not None and not grpc_installed():
        reason = "gRPC needs the grpc extra: pip install 'a2a-switchboard[grpc]'"
        problems.append(Problem(origin, "gateway.grpc_port", reason))
    return problems


def _env_problems(config: GatewayConfig, origin: str) -> list[Problem]:
    """Every variable the configuration names (API keys, tokens) must be set."""
    wanted: list[tuple[tuple[str | int, ...], str, str]] = []
    for index, agent in enumerate(config.agents):
        if not agent.is_remote and agent.model != "offline" and agent.api_key_env is not None:
            wanted.append((("agents", index, "api_key_env"), agent.api_key_env, "the API key"))
        if agent.token_env is not None:
            wanted.append((("agents", index, "token_env"), agent.token_env, "the agent's token"))
    for index, tool in enumerate(config.tools):
        if tool.token_env is not None:
            wanted.append((("tools", index, "token_env"), tool.token_env, "the agent's token"))
    for index, entry in enumerate(config.security.tokens):
        wanted.append((("security", "tokens", index, "token_env"), entry.token_env, f"the token of {entry.name!r}"))
    problems: list[Problem] = []
    for loc, name, what in wanted:
        value = os.environ.get(name, "").strip()
        if not value:
            problems.append(
                Problem(origin, dotted_path(loc), f"the environment variable {name} is not set (it should hold {what})")
            )
        elif loc[-1] == "token_env" and (problem := token_problem(value)) is not None:
            problems.append(Problem(origin, dotted_path(loc), f"the environment variable {name}: {problem}"))
    return problems


def _token(token_env: str | None) -> str | None:
    """The credential in ``token_env`` (checked to be set before anything is built)."""
    return os.environ[token_env].strip() if token_env is not None else None


def _models(config: GatewayConfig, providers: Providers) -> dict[str, ChatModel]:
    """The local agents' models, through the providers (checked before); ``providers.aclose`` closes them."""
    return {agent.name: _model(agent, providers) for agent in config.agents if not agent.is_remote}


def _model(agent: AgentConfig, providers: Providers) -> ChatModel:
    """An agent's own ``base_url`` and ``api_key_env`` win over its provider's (``base_url`` alone: no key)."""
    return providers.chat_model(
        agent.model,
        base_url=agent.base_url,
        api_key_env=agent.api_key_env,
        price_per_1k_tokens=agent.price_per_1k_tokens,
    )


def _model_problems(config: GatewayConfig, origin: str) -> list[Problem]:
    """Every model name (agents', the router's embedder) must have its provider configured."""
    providers = Providers(config.provider_table())
    problems: list[Problem] = []
    for index, agent in enumerate(config.agents):
        if agent.is_remote:
            continue
        own = agent.base_url is not None or agent.api_key_env is not None
        if (problem := providers.problem(agent.model, own_endpoint=own)) is not None:
            problems.append(Problem(origin, dotted_path(("agents", index, "model")), problem))
    embedder = config.router.embedder
    if embedder is not None and (problem := providers.problem(embedder)) is not None:
        problems.append(Problem(origin, "router.embedder", problem))
    return problems


def _router(config: GatewayConfig, providers: Providers) -> SemanticRouter | None:
    if config.router.embedder is None:
        return None
    return SemanticRouter(providers.embedder(config.router.embedder), threshold=config.router.threshold)


def _python_tools(config: GatewayConfig, origin: str) -> tuple[dict[str, Any], list[Problem]]:
    """Import every ``package.module:function`` a local agent names as a tool; what does not import is a problem."""
    found: dict[str, Any] = {}
    problems: list[Problem] = []
    for index, agent in enumerate(config.agents):
        for position, name in enumerate(agent.tools):
            if name in found or any(tool.name == name for tool in config.tools) or not is_python_ref(name):
                continue
            try:
                found[name] = import_python_ref(name)
            except (ImportError, AttributeError) as exc:
                key = dotted_path(("agents", index, "tools", position))
                problems.append(Problem(origin, key, f"cannot import {name!r}: {exc}"))
    return found, problems
