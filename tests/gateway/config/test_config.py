"""The gateway configuration: a valid file loads; every mistake names its file (or variable), key and reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_server.stores.redis_settings import RedisSettings
from gateway.calls.tool import Mode
from gateway.config.load import load_config, validate_config
from gateway.errors import ConfigError
from gateway.event_log import SQLiteEventLog
from gateway.service import build_service

VALID = """
[gateway]
port = 9100
name = "support"
data_dir = "{data_dir}"

[limits]
max_handoffs_per_turn = 3
max_tool_iterations = 4

[swarm]
starting_agent = "triage"
history = "structured"

[stores]
sessions = "sqlite"
events = "memory"

[[agents]]
name = "triage"
instructions = "Route customers to the right specialist."
handoffs = ["billing", "tech"]
tools = ["research"]

[[agents]]
name = "tech"
instructions = "Fix technical problems."
handoffs = ["triage"]

[[agents]]
name = "billing"
url = "http://127.0.0.1:8001"
description = "Refunds and invoices."

[[tools]]
name = "research"
agent = "http://127.0.0.1:8003"
mode = "streaming"
max_cost_usd = 0.05
idle_timeout_secs = 5

[[tools]]
name = "interview"
agent = "http://127.0.0.1:8004"
mode = "conversational"
max_turns = 3
"""


def _write(tmp_path: Path, text: str, name: str = "gateway.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _valid(tmp_path: Path) -> Path:
    return _write(tmp_path, VALID.format(data_dir=tmp_path / "data"))


def _problems(path: Path | None = None, environ: dict[str, str] | None = None, **kwargs: object) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ=environ or {}, **kwargs)  # type: ignore[arg-type]
    return str(caught.value).splitlines()


def test_a_valid_file_loads_with_every_section(tmp_path: Path) -> None:
    config = load_config(_valid(tmp_path), environ={})
    assert (config.gateway.port, config.gateway.host, config.gateway.name) == (9100, "127.0.0.1", "support")
    assert (config.limits.max_handoffs_per_turn, config.limits.max_tool_iterations) == (3, 4)
    assert config.starting_agent == "triage" and config.swarm.history == "structured"
    assert [a.name for a in config.agents] == ["triage", "tech", "billing"]
    assert config.agents[2].is_remote and not config.agents[0].is_remote
    research, interview = config.tools
    assert (research.mode, research.max_cost_usd, research.idle_timeout_secs) == ("streaming", 0.05, 5.0)
    assert interview.agent_tool().mode == Mode("conversational", max_turns=3)
    assert config.store_path(config.stores.sessions, "sessions.db") == str(tmp_path / "data" / "sessions.db")
    assert config.store_path(config.stores.events, "events.db") is None


def test_no_file_gives_one_offline_agent_and_sqlite_stores_under_the_data_dir() -> None:
    config = load_config(None, environ={})
    assert [(a.name, a.model) for a in config.agents] == [("assistant", "offline")]
    assert config.starting_agent == "assistant"
    assert config.store_path(config.stores.events, "events.db") == str(Path(".switchboard") / "events.db")
    assert (config.gateway.host, config.gateway.port) == ("127.0.0.1", 8080)


def test_an_unknown_key_is_refused_with_file_key_and_the_keys_allowed_there(tmp_path: Path) -> None:
    path = _write(tmp_path, "[gateway]\nprot = 9000\n")
    assert _problems(path) == [
        f"{path}: gateway.prot: unknown key 'prot' "
        "(expected one of: host, port, name, description, public_url, data_dir, log_level, max_body_bytes, "
        "startup_wait_secs, max_connections, header_timeout_secs, body_timeout_secs, loop, http, "
        "grpc_port, grpc_host, push, extended_card)"
    ]


def test_an_unknown_key_inside_a_list_entry_names_its_index(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[agents]]\nname = "a"\n\n[[agents]]\nname = "b"\ninstruction = "typo"\n')
    (line,) = _problems(path)
    assert line.startswith(
        f"{path}: agents[1].instruction: unknown key 'instruction' (expected one of: name, description, url, "
    )


def test_a_bad_mode_is_refused_with_the_modes_there_are(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[tools]]\nname = "t"\nagent = "http://127.0.0.1:9"\nmode = "fast"\n')
    assert _problems(path) == [f"{path}: tools[0].mode: unknown mode 'fast' (expected sync, streaming, conversational)"]


def test_bad_values_are_all_reported_at_once(tmp_path: Path) -> None:
    text = (
        '[gateway]\nport = "high"\n\n[limits]\nmax_tool_iterations = -1\n\n[stores]\nevents = "redis"\n\n'
        '[[agents]]\nname = "a"\nmodel = "claude 3"\n\n'
        '[[tools]]\nname = "bad name"\nagent = "ftp://x"\n'
    )
    path = _write(tmp_path, text)
    problems = _problems(path)
    assert (
        f"{path}: gateway.port: Input should be a valid integer, unable to parse string as an integer (got 'high')"
        in problems
    )
    assert f"{path}: limits.max_tool_iterations: Input should be greater than or equal to 0 (got -1)" in problems
    assert (
        f"{path}: stores.events: unknown store 'redis' (expected memory, sqlite, sqlite:PATH or redis://HOST:PORT/DB)"
        in problems
    )
    assert any(
        p.startswith(f"{path}: agents[0].model: 'claude 3' is not a model name (expected offline, PROVIDER:MODEL")
        for p in problems
    )
    assert f"{path}: tools[0].name: tool name 'bad name' is not valid (1-64 letters, digits, '_' or '-')" in problems
    assert any(p.startswith(f"{path}: tools[0].agent: invalid agent URI 'ftp://x'") for p in problems)
    assert len(problems) == 6


def test_a_remote_agent_takes_no_local_settings_and_needs_an_http_url(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        '[[agents]]\nname = "b"\nurl = "http://127.0.0.1:9"\ninstructions = "x"\n\n[[agents]]\nname = "c"\nurl = "local://c"\n',
    )
    problems = _problems(path)
    assert problems[0] == (
        f"{path}: agents[0]: a remote agent (with url) runs elsewhere and takes no instructions; "
        "remove them, or remove url to define a local agent"
    )
    assert problems[1].startswith(f"{path}: agents[1].url: 'local://c' is not an http:// or https:// URL")


def test_max_cost_usd_is_a_remote_agents_and_reaches_its_spec(tmp_path: Path) -> None:
    local = _write(tmp_path, '[[agents]]\nname = "a"\nmax_cost_usd = 0.5\n')
    assert _problems(local) == [
        f"{local}: agents[0]: max_cost_usd limits what a remote agent (with url) reports; "
        "a local agent's spend is its model's"
    ]
    negative = _write(tmp_path, '[[agents]]\nname = "b"\nurl = "http://127.0.0.1:9"\nmax_cost_usd = -1\n')
    assert _problems(negative)[0].startswith(f"{negative}: agents[0].max_cost_usd:")
    remote = _write(tmp_path, '[[agents]]\nname = "b"\nurl = "http://127.0.0.1:9"\nmax_cost_usd = 0.25\n')
    service = build_service(load_config(remote), str(remote))
    assert [spec.max_cost_usd for spec in service.members._pending] == [0.25]


def test_references_must_name_defined_agents_and_tools(tmp_path: Path) -> None:
    text = (
        '[swarm]\nstarting_agent = "nobody"\n\n'
        '[[agents]]\nname = "a"\nhandoffs = ["ghost", "a"]\ntools = ["missing", "pkg.mod:func"]\n\n'
        '[[agents]]\nname = "a"\n\n'
        '[[tools]]\nname = "t"\nagent = "http://127.0.0.1:9"\n\n[[tools]]\nname = "t"\nagent = "http://127.0.0.1:9"\n'
    )
    path = _write(tmp_path, text)
    assert _problems(path) == [
        f"{path}: agents[1].name: another agent is already named 'a'",
        f"{path}: tools[1].name: another tool is already named 't'",
        f"{path}: agents[0].handoffs[0]: no agent named 'ghost' (defined: a)",
        f"{path}: agents[0].handoffs[1]: an agent cannot hand off to itself",
        f"{path}: agents[0].tools[0]: no tool named 'missing' (define it under [[tools]] (defined: t), "
        "name a Python function as package.module:function, or blackboard_read / blackboard_write)",
        f"{path}: swarm.starting_agent: no agent named 'nobody' (defined: a)",
    ]


def test_max_turns_only_with_the_conversational_mode(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[tools]]\nname = "t"\nagent = "http://127.0.0.1:9"\nmode = "sync"\nmax_turns = 2\n')
    assert _problems(path) == [f"{path}: tools[0]: max_turns applies to mode 'conversational' only, not 'sync'"]


def test_broken_toml_and_a_missing_file_name_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "[gateway\nport = 1\n")
    (line,) = _problems(path)
    assert line.startswith(f"{path}: is not valid TOML: ") and "line 1" in line
    assert _problems(tmp_path / "absent.toml") == [f"{tmp_path / 'absent.toml'}: no such file"]


def test_environment_overrides_win_over_the_file(tmp_path: Path) -> None:
    environ = {
        "SWITCHBOARD_PORT": "9200",
        "SWITCHBOARD_EVENTS_STORE": "sqlite:/tmp/elsewhere.db",
        "SWITCHBOARD__LIMITS__MAX_TOOL_ITERATIONS": "7",
        "SWITCHBOARD__TOOLS__RESEARCH__MAX_COST_USD": "0.5",
        "SWITCHBOARD__AGENTS__1__INSTRUCTIONS": "Fix everything.",
        "SWITCHBOARD__SWARM__STARTING_AGENT": "tech",
        "UNRELATED": "1",
    }
    config = load_config(_valid(tmp_path), environ=environ)
    assert config.gateway.port == 9200
    assert config.stores.events == "sqlite:/tmp/elsewhere.db"
    assert config.limits.max_tool_iterations == 7
    assert config.tools[0].max_cost_usd == 0.5
    assert config.agents[1].instructions == "Fix everything."
    assert config.starting_agent == "tech"


def test_command_line_overrides_win_over_the_environment(tmp_path: Path) -> None:
    config = load_config(_valid(tmp_path), environ={"SWITCHBOARD_PORT": "9200"}, overrides={"gateway.port": 9300})
    assert config.gateway.port == 9300


def test_a_bad_environment_value_names_the_variable_key_and_reason(tmp_path: Path) -> None:
    problems = _problems(
        _valid(tmp_path),
        environ={
            "SWITCHBOARD_PORT": "high",
            "SWITCHBOARD__TOOLS__RESEARCH__MODE": "fast",
            "SWITCHBOARD__GATEWAY__PROT": "1",
        },
    )
    assert problems == [
        "environment variable SWITCHBOARD_PORT: gateway.port: Input should be a valid integer, "
        "unable to parse string as an integer (got 'high')",
        "environment variable SWITCHBOARD__GATEWAY__PROT: gateway.prot: unknown key 'prot' "
        "(expected one of: host, port, name, description, public_url, data_dir, log_level, max_body_bytes, "
        "startup_wait_secs, max_connections, header_timeout_secs, body_timeout_secs, loop, http, "
        "grpc_port, grpc_host, push, extended_card)",
        "environment variable SWITCHBOARD__TOOLS__RESEARCH__MODE: tools[0].mode: unknown mode 'fast' "
        "(expected sync, streaming, conversational)",
    ]


def test_an_environment_variable_naming_no_list_entry_says_which_exist(tmp_path: Path) -> None:
    problems = _problems(_valid(tmp_path), environ={"SWITCHBOARD__TOOLS__NOPE__MODE": "sync"})
    assert problems == [
        "environment variable SWITCHBOARD__TOOLS__NOPE__MODE: tools: has no entry named or numbered 'nope' "
        "(entries: research, interview)"
    ]


def test_validate_config_takes_plain_data() -> None:
    config = validate_config({"stores": {"sessions": "memory", "events": "memory"}})
    assert config.agents[0].name == "assistant"
    with pytest.raises(ConfigError, match=r"^inline: limits.max_handoffs_per_turn: Input should be"):
        validate_config({"limits": {"max_handoffs_per_turn": "many"}}, "inline")


def test_building_reports_an_unset_api_key_variable_and_an_unimportable_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SWITCHBOARD_TEST_KEY", raising=False)
    config = validate_config(
        {
            "stores": {"sessions": "memory", "events": "memory"},
            "agents": [
                {"name": "a", "model": "openai:gpt-4o-mini", "api_key_env": "SWITCHBOARD_TEST_KEY"},
                {"name": "b", "tools": ["no_such_package.module:func"]},
            ],
        }
    )
    with pytest.raises(ConfigError) as caught:
        build_service(config, "gw.toml")
    assert str(caught.value).startswith("gw.toml: agents[1].tools[0]: cannot import 'no_such_package.module:func': ")
    config = validate_config(
        {"agents": [{"name": "a", "model": "openai:gpt-4o-mini", "api_key_env": "SWITCHBOARD_TEST_KEY"}]}
    )
    with pytest.raises(ConfigError) as caught:
        build_service(config, "gw.toml")
    assert str(caught.value) == (
        "gw.toml: agents[0].api_key_env: the environment variable SWITCHBOARD_TEST_KEY is not set "
        "(it should hold the API key)"
    )


def test_environment_values_keep_their_text_where_the_key_wants_a_string(tmp_path: Path) -> None:
    environ = {
        "SWITCHBOARD__GATEWAY__NAME": "2024",
        "SWITCHBOARD__GATEWAY__DESCRIPTION": "true",
        "SWITCHBOARD_DATA_DIR": "2024-01-01",
        "SWITCHBOARD_PORT": "9200",
        "SWITCHBOARD__SWARM__RESOLVE_URIS": "false",
        "SWITCHBOARD__AGENTS__TECH__HANDOFFS": '["triage", "billing"]',
    }
    config = load_config(_valid(tmp_path), environ=environ)
    assert config.gateway.name == "2024" and config.gateway.description == "true"
    assert config.gateway.data_dir == "2024-01-01"
    assert config.gateway.port == 9200 and config.swarm.resolve_uris is False
    assert config.agents[1].handoffs == ["triage", "billing"]


def test_overrides_that_lead_nowhere_are_reported_like_the_environment_form(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_valid(tmp_path), environ={}, overrides={"tools.nope.mode": "sync", "gateway.port.x": 1})
    assert [str(p) for p in caught.value.problems] == [
        "--mode: tools: has no entry named or numbered 'nope' (entries: research, interview)",
        "--x: gateway.port: is a single value, it has no keys to set",
    ]


def test_resolve_uris_defaults_to_true_and_reaches_the_runner() -> None:
    import anyio

    from gateway.service import build_service

    assert validate_config({}).swarm.resolve_uris is True
    config = validate_config({"swarm": {"resolve_uris": False}, "stores": {"sessions": "memory", "events": "memory"}})
    service = build_service(config)

    async def check() -> None:
        async with service:
            assert service.runner.resolve_uris is False

    anyio.run(check)


def test_the_defaults_of_limits_and_tools_are_the_librarys() -> None:
    import inspect

    from gateway.defaults import IDLE_TIMEOUT_S as DEFAULT_IDLE_TIMEOUT_S, TOOL_TIMEOUT_MS as DEFAULT_TIMEOUT_MS
    from gateway.swarm import Runner

    config = validate_config({"tools": [{"name": "t", "agent": "http://127.0.0.1:1"}]})
    runner = inspect.signature(Runner).parameters
    assert config.limits.max_handoffs_per_turn == runner["max_handoffs_per_turn"].default
    assert config.limits.max_tool_iterations == runner["max_tool_iterations"].default
    assert config.tools[0].timeout_ms == DEFAULT_TIMEOUT_MS
    assert config.tools[0].idle_timeout_secs == DEFAULT_IDLE_TIMEOUT_S


def test_redis_stores_take_their_settings_and_the_registry_follows_the_sessions(tmp_path: Path) -> None:
    spec = "redis://127.0.0.1:6390/2?prefix=desk"
    config = load_config(
        _write(tmp_path, f'[stores]\nsessions = "{spec}"\nevents = "{spec}"\n\n[stores.redis]\nlease_secs = 2\n'),
        environ={"SWITCHBOARD__STORES__REDIS__LOCK_WAIT_SECS": "7"},
    )
    assert config.stores.registry_spec == spec and config.stores.registry is None
    assert config.stores.redis.settings() == RedisSettings(lease_s=2.0, lock_wait_s=7.0)
    assert config.store_path(config.stores.sessions, "sessions.db") is None
    assert validate_config({}).stores.registry_spec == "sqlite"
    with pytest.raises(ConfigError) as caught:
        load_config(
            _write(
                tmp_path,
                '[stores]\nregistry = "redis://h:port/0"\nblackboard = "redis://h:1/0"\n'
                "\n[stores.redis]\nlease_secs = 0\n",
            )
        )
    problems = str(caught.value)
    assert "stores.blackboard: the blackboard has no Redis store ('redis://h:1/0')" in problems
    assert "stores.registry: the store 'redis://h:port/0' has a port that is not a number" in problems
    assert "stores.redis.lease_secs: Input should be greater than 0" in problems


@pytest.mark.anyio
async def test_the_event_logs_durability_is_a_setting_its_file_runs_with(tmp_path: Path) -> None:
    """``[stores] events_synchronous``: PRAGMA synchronous of the log's connection (1 NORMAL, 2 FULL)."""
    seen = {}
    for level, environ in (("NORMAL", {}), ("FULL", {"SWITCHBOARD__STORES__EVENTS_SYNCHRONOUS": "FULL"})):
        data_dir = tmp_path / level
        config = load_config(_write(tmp_path, f'[gateway]\ndata_dir = "{data_dir}"\n'), environ=environ)
        service = build_service(config, "gw.toml")
        async with service:
            log = service.event_log
            assert isinstance(log, SQLiteEventLog)
            seen[level] = await log._db.run(lambda conn: conn.execute("PRAGMA synchronous").fetchone()[0])
    assert seen == {"NORMAL": 1, "FULL": 2}
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, '[stores]\nevents_synchronous = "OFF"\n'))
    assert "stores.events_synchronous: Input should be 'NORMAL' or 'FULL'" in str(caught.value)
