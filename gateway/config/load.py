"""Loading the configuration: one TOML file, environment overrides, checked before anything starts.

``load_config(path)`` reads the file, applies the environment (gateway/config/env.py),
validates everything with the models of ``model.py`` and cross-checks names (handoffs and
tools must name something defined). Every problem is reported at once as ``ConfigError``,
one line per problem, each naming where the value came from, its key and the reason::

    gateway.toml: tools[0].mode: unknown mode 'fast' (expected sync, streaming, conversational)

See docs/configuration.md for the reference.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gateway import defaults
from gateway.config.env import Overrides, apply_environment
from gateway.config.model import BLACKBOARD_TOOLS, AgentConfig, GatewayConfig
from gateway.config.python_refs import is_python_ref
from gateway.errors import ConfigError, Problem
from gateway.models.providers import OFFLINE, OPENAI, PROVIDER_NAME, parse_model_name
from protocol import dotted_path


def load_config(
    path: str | Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> GatewayConfig:
    """Read ``path`` (None: defaults only), apply the environment, then ``overrides`` (``"gateway.port"`` -> value).

    ``overrides`` are what command-line flags set; they win over the file and the environment.
    """
    origin = str(path) if path is not None else "configuration"
    data = _read_toml(Path(path)) if path is not None else {}
    env = os.environ if environ is None else environ
    applied = apply_environment(data, env)
    for dotted, value in (overrides or {}).items():
        applied.set_value(dotted.split("."), value, f"--{dotted.rsplit('.', 1)[-1].replace('_', '-')}")
    if applied.problems:
        raise ConfigError([Problem(source, dotted_path(loc), reason) for source, loc, reason in applied.problems])
    return validate_config(applied.data, origin, applied)


def validate_config(
    data: dict[str, Any], origin: str = "configuration", overrides: Overrides | None = None
) -> GatewayConfig:
    """Validate plain data (a parsed file, with overrides already applied) into a GatewayConfig."""
    where = overrides or Overrides(data)
    try:
        config = GatewayConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError([_problem(error, origin, where) for error in exc.errors()]) from None
    problems = [Problem(where.origin_of(loc, origin), dotted_path(loc), reason) for loc, reason in _cross_check(config)]
    if problems:
        raise ConfigError(problems)
    return config.with_default_agent()


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([Problem(str(path), "", "no such file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([Problem(str(path), "", f"cannot be read: {exc}")]) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([Problem(str(path), "", f"is not valid TOML: {exc}")]) from None


def _problem(error: Any, origin: str, where: Overrides) -> Problem:
    loc = tuple(error["loc"])
    allowed = _allowed_keys(loc[:-1]) if error["type"] == "extra_forbidden" else []
    return Problem(where.origin_of(loc, origin), dotted_path(loc), describe_error(error, allowed))


def describe_error(error: Any, allowed: list[str] | None = None) -> str:
    """One pydantic error as a reason a person can act on (``allowed``: the keys accepted there)."""
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"unknown key {error['loc'][-1]!r}" + (f" (expected one of: {', '.join(allowed)})" if allowed else "")
    if kind == "value_error":
        return str(error["ctx"]["error"])
    if kind == "missing":
        return "is required"
    return f"{error['msg']} (got {error['input']!r})"


def _allowed_keys(loc: tuple[str | int, ...]) -> list[str]:
    """The keys the model at ``loc`` accepts, found by walking the schema."""
    model: Any = GatewayConfig
    for item in loc:
        if isinstance(item, int):
            continue
        field = model.model_fields.get(item)
        if field is None:
            return []
        annotation = field.annotation
        args = getattr(annotation, "__args__", ())
        model = args[0] if args and isinstance(args[0], type) else annotation
    return list(model.model_fields) if isinstance(model, type) and issubclass(model, BaseModel) else []


def _cross_check(config: GatewayConfig) -> list[tuple[tuple[str | int, ...], str]]:
    """Names must be unique and every reference must name something defined."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    agents: dict[str, AgentConfig] = {}
    for index, agent in enumerate(config.agents):
        if agent.name in agents:
            problems.append((("agents", index, "name"), f"another agent is already named {agent.name!r}"))
        agents.setdefault(agent.name, agent)
    tools: set[str] = set()
    for index, tool in enumerate(config.tools):
        if tool.name in tools:
            problems.append((("tools", index, "name"), f"another tool is already named {tool.name!r}"))
        tools.add(tool.name)
    known_agents = ", ".join(agents) or "none"
    for index, agent in enumerate(config.agents):
        for position, target in enumerate(agent.handoffs):
            if target not in agents:
                where = ("agents", index, "handoffs", position)
                problems.append((where, f"no agent named {target!r} (defined: {known_agents})"))
            elif target == agent.name:
                problems.append((("agents", index, "handoffs", position), "an agent cannot hand off to itself"))
        for position, name in enumerate(agent.tools):
            if name not in tools and name not in BLACKBOARD_TOOLS and not is_python_ref(name):
                defined = ", ".join(sorted(tools)) or "none"
                problems.append(
                    (
                        ("agents", index, "tools", position),
                        f"no tool named {name!r} (define it under [[tools]] (defined: {defined}), "
                        "name a Python function as package.module:function, or blackboard_read / blackboard_write)",
                    )
                )
    starting = config.swarm.starting_agent
    if starting is not None and starting not in agents and (agents or starting != defaults.STARTING_AGENT_NAME):
        problems.append((("swarm", "starting_agent"), f"no agent named {starting!r} (defined: {known_agents})"))
    fallback = config.swarm.fallback
    if fallback not in ("current", "human") and fallback not in agents:
        reason = f"no agent named {fallback!r} (expected current, human or an agent: {known_agents})"
        problems.append((("swarm", "fallback"), reason))
    return problems + _provider_problems(config)


def _provider_problems(config: GatewayConfig) -> list[tuple[tuple[str | int, ...], str]]:
    """Provider names are valid, non-openai ones have a base_url, and every model names a known provider."""
    problems: list[tuple[tuple[str | int, ...], str]] = []
    for name, entry in config.providers.items():
        if not PROVIDER_NAME.match(name) or name == OFFLINE:
            problems.append(
                (("providers", name), "a provider's name is lower-case letters, digits, '_', '-' (not offline)")
            )
        elif name != OPENAI and not entry.base_url:
            problems.append(
                (("providers", name, "base_url"), "is required (the provider's OpenAI-compatible endpoint)")
            )
    table = config.provider_table()
    named: list[tuple[tuple[str | int, ...], str]] = [
        (("agents", index, "model"), agent.model) for index, agent in enumerate(config.agents) if not agent.is_remote
    ]
    if config.router.embedder is not None:
        named.append((("router", "embedder"), config.router.embedder))
    for loc, model in named:
        try:
            parse_model_name(model, table)
        except ValueError as exc:
            problems.append((loc, str(exc)))
    return problems
