"""The configuration file's shape: one pydantic model per section, each value checked where it is declared.

What spans sections (names that must be defined, providers that must be known) is checked
once the whole file is read, in ``load.py``. See docs/configuration.md for the reference.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from agent_server.http.limits import ServerLimits
from agent_server.http.speedups import DEFAULT_HTTP, DEFAULT_LOOP, EventLoop, HttpParser
from agent_server.stores.redis_settings import RedisSettings, parse_redis_spec
from agent_server.stores.spec import REDIS_SCHEMES
from gateway import defaults
from gateway.calls.budget import Budget
from gateway.calls.tool import AgentTool, Mode
from gateway.config.face import ExtendedCardConfig, PushConfig
from gateway.config.sections import Strict, as_settings
from gateway.errors import InvalidAgentURI
from gateway.models.providers import ProviderSettings, parse_model_name
from gateway.peers.allowed_hosts import parse_host_pattern
from gateway.peers.limits import PeerLimits
from gateway.tools import TOOL_NAME_PATTERN, TOOL_NAME_RULE
from gateway.uri import parse_agent_uri

MODES = ("sync", "streaming", "conversational")
BLACKBOARD_TOOLS = ("blackboard_read", "blackboard_write")
"""Tool names a configured agent may list to read and write the blackboard (gateway/blackboard)."""
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LOCAL_ONLY = (
    "instructions",
    "model",
    "base_url",
    "api_key_env",
    "price_per_1k_tokens",
    "handoffs",
    "tools",
    "examples",
)
_TOKEN_NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
_PEER_DEFAULTS = PeerLimits()
_SERVER_DEFAULTS = ServerLimits()
_REDIS_DEFAULTS = RedisSettings()
ADMIN_TOKEN_ENV = "SWITCHBOARD_ADMIN_TOKEN"
"""The environment variable whose value, when set, is the gateway's admin token (principal ``admin``)."""


class ServerConfig(Strict):
    """``[gateway]``: where the service listens, what it calls itself, and what its own A2A face offers.

    ``grpc_port``: the face over gRPC too, on ``grpc_host`` (default: ``host``), listed in the card.
    """

    host: str = defaults.HOST
    port: int = Field(defaults.PORT, ge=1, le=65535)
    name: str = Field("switchboard", min_length=1)
    description: str | None = None
    public_url: str | None = None
    data_dir: str = defaults.DATA_DIR
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    max_body_bytes: int = Field(defaults.MAX_BODY_BYTES, ge=1)
    startup_wait_secs: float = Field(defaults.STARTUP_WAIT_S, ge=0)
    max_connections: int = Field(_SERVER_DEFAULTS.max_connections, ge=1)
    header_timeout_secs: float = Field(_SERVER_DEFAULTS.header_timeout_s, gt=0)
    body_timeout_secs: float = Field(_SERVER_DEFAULTS.body_timeout_s, gt=0)
    loop: EventLoop = DEFAULT_LOOP
    http: HttpParser = DEFAULT_HTTP
    grpc_port: int | None = Field(None, ge=0, le=65535)
    grpc_host: str | None = Field(None, min_length=1)
    push: PushConfig = Field(default_factory=PushConfig)
    extended_card: ExtendedCardConfig | None = None

    @model_validator(mode="after")
    def _grpc_host_needs_port(self) -> ServerConfig:
        if self.grpc_host is not None and self.grpc_port is None:
            raise ValueError("grpc_host is where the gRPC face listens: set grpc_port too (0: any free port)")
        return self

    @property
    def grpc_bind_host(self) -> str:
        return self.grpc_host or self.host

    def server_limits(self) -> ServerLimits:
        """What one client connection may hold (agent_server/http/server.py)."""
        return ServerLimits(
            max_connections=self.max_connections,
            header_timeout_s=self.header_timeout_secs,
            body_timeout_s=self.body_timeout_secs,
        )


class LimitsConfig(Strict):
    """``[limits]``: bounds of one user turn."""

    max_handoffs_per_turn: int = Field(defaults.MAX_HANDOFFS_PER_TURN, ge=0)
    max_tool_iterations: int = Field(defaults.MAX_TOOL_ITERATIONS, ge=0)


class PeersConfig(Strict):
    """``[peers]``: how the gateway calls agents (deadlines, its connection pool, size limits; peers/limits.py)."""

    connect_timeout_secs: float = Field(_PEER_DEFAULTS.connect_timeout_s, gt=0)
    headers_timeout_secs: float = Field(_PEER_DEFAULTS.headers_timeout_s, gt=0)
    cancel_timeout_secs: float = Field(_PEER_DEFAULTS.cancel_timeout_s, gt=0)
    max_connections: int = Field(_PEER_DEFAULTS.max_connections, ge=1)
    pool_timeout_secs: float = Field(_PEER_DEFAULTS.pool_timeout_s, gt=0)
    keepalive_secs: float = Field(_PEER_DEFAULTS.keepalive_s, gt=0)
    max_line_bytes: int = Field(_PEER_DEFAULTS.max_line_bytes, ge=1)
    max_stream_bytes: int = Field(_PEER_DEFAULTS.max_stream_bytes, ge=1)
    max_answer_bytes: int = Field(_PEER_DEFAULTS.max_answer_bytes, ge=1)
    max_card_bytes: int = Field(_PEER_DEFAULTS.max_card_bytes, ge=1)
    max_resubscribes: int = Field(_PEER_DEFAULTS.max_resubscribes, ge=0)

    def limits(self) -> PeerLimits:
        return PeerLimits(**as_settings(self))


class TokenConfig(Strict):
    """One ``[[security.tokens]]`` entry: a caller's name, its scope, the variable holding its token, its limits.

    ``rate_per_minute``: requests a minute to the API and the A2A faces; ``max_spend_usd``:
    dollars its runs may spend per ``spend_window`` before new turns and tool calls are refused
    (gateway/limits/; None: no limit, the default for every token, admin ones too).
    """

    name: str
    scope: Literal["admin", "chat"] = "chat"
    token_env: str
    rate_per_minute: int | None = Field(default=None, ge=1)
    max_spend_usd: float | None = Field(default=None, gt=0)
    spend_window: Literal["hour", "day", "week"] = "day"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _TOKEN_NAME.match(value):
            raise ValueError(f"token name {value!r} is not valid (1-64 letters, digits, '_', '.', '@' or '-')")
        return value

    @field_validator("token_env")
    @classmethod
    def _token_env(cls, value: str) -> str:
        return _env_name(value, "token")


class SecurityConfig(Strict):
    """``[security]``: who may call the gateway, from which web origins, and where it may connect.

    ``allowed_agent_hosts`` None (the default) means the hosts of the agents and tools the
    operator configured or registered; see docs/security.md.
    """

    tokens: list[TokenConfig] = Field(default_factory=list)
    allowed_origins: list[str] = Field(default_factory=list)
    allowed_agent_hosts: list[str] | None = None

    @field_validator("allowed_agent_hosts")
    @classmethod
    def _hosts(cls, value: list[str] | None) -> list[str] | None:
        for pattern in value or []:
            parse_host_pattern(pattern)
        return value

    @field_validator("allowed_origins")
    @classmethod
    def _origins(cls, value: list[str]) -> list[str]:
        for origin in value:
            if not origin.startswith(("http://", "https://")) or origin.rstrip("/").count("/") != 2:
                raise ValueError(f"{origin!r} is not a web origin (scheme://host[:port], e.g. https://console.example)")
        return value


class SwarmConfig(Strict):
    """``[swarm]``: who answers first, what an agent sees after a transfer, how transfer targets are found.

    ``resolve_uris`` false: a transfer a remote agent asks for must name an agent registered
    by name; its target is never taken as a URI (``mcp+stdio:`` targets never are).
    ``fallback``: who takes the conversation when the handoff limit or a cycle trips:
    ``current`` (the agent holding it answers), ``human`` (the turn ends input-required), or
    an agent's name (a supervisor).
    ``history_window``: the most messages of the history an agent is shown per turn, whatever
    ``history``; the earlier ones are told in one note (gateway/swarm/history_window.py).
    """

    starting_agent: str | None = None
    history: Literal["full", "summary", "structured"] = "full"
    history_window: int = Field(defaults.HISTORY_WINDOW, ge=defaults.HISTORY_WINDOW_MIN)
    resolve_uris: bool = True
    fallback: str = Field("current", min_length=1)


class RouterConfig(Strict):
    """``[router]``: the semantic router, on when ``embedder`` is set (``offline``, or an embedding model's name)."""

    embedder: str | None = None
    threshold: float = Field(defaults.ROUTER_THRESHOLD, ge=-1.0, le=1.0)

    @field_validator("embedder")
    @classmethod
    def _embedder(cls, value: str | None) -> str | None:
        if value is not None:
            parse_model_name(value, any_provider=True)
        return value


class ProviderConfig(Strict):
    """One ``[providers.NAME]`` table: an OpenAI-compatible endpoint that model names ``NAME:MODEL`` use."""

    base_url: str | None = None
    api_key_env: str | None = None

    @field_validator("api_key_env")
    @classmethod
    def _api_key_env(cls, value: str | None) -> str | None:
        return None if value is None else _env_name(value, "key")

    def settings(self) -> ProviderSettings:
        return ProviderSettings(base_url=self.base_url, api_key_env=self.api_key_env)


class RedisConfig(Strict):
    """``[stores.redis]``: leases and timeouts of the Redis stores (agent_server/stores/redis_settings.py)."""

    lease_secs: float = Field(_REDIS_DEFAULTS.lease_s, gt=0)
    lock_wait_secs: float = Field(_REDIS_DEFAULTS.lock_wait_s, gt=0)
    connect_timeout_secs: float = Field(_REDIS_DEFAULTS.connect_timeout_s, gt=0)
    command_timeout_secs: float = Field(_REDIS_DEFAULTS.command_timeout_s, gt=0)
    follow_block_secs: float = Field(_REDIS_DEFAULTS.follow_block_s, gt=0)
    reconnect_secs: float = Field(_REDIS_DEFAULTS.reconnect_s, gt=0)
    max_connections: int = Field(_REDIS_DEFAULTS.max_connections, ge=1)

    def settings(self) -> RedisSettings:
        return RedisSettings(**as_settings(self))


class StoresConfig(Strict):
    """``[stores]``: ``memory``, ``sqlite`` (a file under ``data_dir``), ``sqlite:PATH`` or ``redis://HOST:PORT/DB``.

    ``registry`` (agents and tools registered through the API) is by default where
    ``sessions`` are (for plain ``sqlite``, in the sessions' file). ``events_synchronous``:
    the SQLite event log's durability, ``NORMAL`` (a commit survives the process's death) or
    ``FULL`` (power loss too, an fsync per commit). ``events_retention_days`` and
    ``events_max_runs``: how long and how many closed runs the event log keeps (0: no bound;
    gateway/event_log/retention.py).
    """

    sessions: str = "sqlite"
    events: str = "sqlite"
    events_synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
    events_retention_days: float = Field(defaults.EVENTS_RETENTION_DAYS, ge=0)
    events_max_runs: int = Field(0, ge=0)
    tasks: str = "memory"
    blackboard: str = "sqlite"
    registry: str | None = None
    redis: RedisConfig = Field(default_factory=RedisConfig)

    @field_validator("sessions", "events", "tasks", "blackboard", "registry")
    @classmethod
    def _store_spec(cls, value: str | None) -> str | None:
        if value is None or value in ("memory", "sqlite"):
            return value
        if value.startswith("sqlite:") and len(value) > len("sqlite:"):
            return value
        if value.lower().startswith(REDIS_SCHEMES):
            parse_redis_spec(value)
            return value
        raise ValueError(f"unknown store {value!r} (expected memory, sqlite, sqlite:PATH or redis://HOST:PORT/DB)")

    @field_validator("blackboard")
    @classmethod
    def _board_spec(cls, value: str) -> str:
        if value.lower().startswith(REDIS_SCHEMES):
            raise ValueError(f"the blackboard has no Redis store ({value!r}); use memory, sqlite or sqlite:PATH")
        return value

    @property
    def registry_spec(self) -> str:
        return self.registry if self.registry is not None else self.sessions


class AgentConfig(Strict):
    """One ``[[agents]]`` entry: a local agent (instructions, model, ...) or a remote one (``url``)."""

    name: str = Field(min_length=1)
    description: str | None = None
    url: str | None = None
    instructions: str = defaults.AGENT_INSTRUCTIONS
    model: str = "offline"
    base_url: str | None = None
    api_key_env: str | None = None
    price_per_1k_tokens: tuple[float, float] | None = None
    """Dollars per 1000 input and per 1000 output tokens: a model call's ``cost_usd`` (none: 0)."""
    token_env: str | None = None
    max_cost_usd: float | None = Field(None, ge=0, allow_inf_nan=False)
    """A remote agent's: what one of its tasks may cost, as it reports (a turn, or a call through its proxy)."""
    handoffs: list[str] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list, max_length=defaults.ROUTER_MAX_EXAMPLES)

    @property
    def is_remote(self) -> bool:
        return self.url is not None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if value != value.strip():
            raise ValueError(f"agent name {value!r} has spaces around it")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None:
            check_agent_url(value)
        return value

    @field_validator("model")
    @classmethod
    def _model(cls, value: str) -> str:
        parse_model_name(value, any_provider=True)  # the form only; the provider is cross-checked
        return value

    @field_validator("api_key_env")
    @classmethod
    def _api_key_env(cls, value: str | None) -> str | None:
        return None if value is None else _env_name(value, "key")

    @field_validator("price_per_1k_tokens")
    @classmethod
    def _price(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        if value is not None and not all(math.isfinite(p) and p >= 0 for p in value):
            raise ValueError("price_per_1k_tokens is [input, output] in dollars per 1000 tokens, each >= 0")
        return value

    @field_validator("token_env")
    @classmethod
    def _token_env(cls, value: str | None) -> str | None:
        return None if value is None else _env_name(value, "token")

    @model_validator(mode="after")
    def _remote_or_local(self) -> AgentConfig:
        if self.url is not None:
            mixed = [key for key in _LOCAL_ONLY if key in self.model_fields_set]
            if mixed:
                raise ValueError(
                    f"a remote agent (with url) runs elsewhere and takes no {', '.join(mixed)}; "
                    "remove them, or remove url to define a local agent"
                )
        elif self.token_env is not None:
            raise ValueError("token_env is the credential of a remote agent (with url); a local agent takes none")
        elif self.max_cost_usd is not None:
            raise ValueError(
                "max_cost_usd limits what a remote agent (with url) reports; a local agent's spend is its model's"
            )
        return self


class ToolConfig(Strict):
    """One ``[[tools]]`` entry (also the body of ``POST /tools``): an agent callable as a tool."""

    name: str
    agent: str
    mode: str = "sync"
    max_turns: int | None = Field(None, ge=1)
    timeout_ms: int = Field(defaults.TOOL_TIMEOUT_MS, gt=0)
    max_cost_usd: float | None = Field(None, ge=0)
    idle_timeout_secs: float = Field(defaults.IDLE_TIMEOUT_S, gt=0)
    description: str | None = None
    token_env: str | None = None

    @field_validator("token_env")
    @classmethod
    def _token_env(cls, value: str | None) -> str | None:
        return None if value is None else _env_name(value, "token")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not TOOL_NAME_PATTERN.match(value):
            raise ValueError(f"tool name {value!r} is not valid ({TOOL_NAME_RULE})")
        return value

    @field_validator("agent")
    @classmethod
    def _agent(cls, value: str) -> str:
        try:
            parse_agent_uri(value)
        except InvalidAgentURI as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("mode")
    @classmethod
    def _mode(cls, value: str) -> str:
        if value not in MODES:
            raise ValueError(f"unknown mode {value!r} (expected {', '.join(MODES)})")
        return value

    @model_validator(mode="after")
    def _turns_only_when_conversational(self) -> ToolConfig:
        if self.max_turns is not None and self.mode != "conversational":
            raise ValueError(f"max_turns applies to mode 'conversational' only, not {self.mode!r}")
        return self

    def agent_tool(self, token: str | None = None) -> AgentTool:
        """The agent tool this entry describes; ``token`` is its credential (read from ``token_env`` by the caller)."""
        if self.mode == "conversational":
            mode = Mode("conversational", max_turns=self.max_turns or defaults.CONVERSATIONAL_MAX_TURNS)
        else:
            mode = Mode(self.mode)  # type: ignore[arg-type]
        return AgentTool(
            name=self.name,
            agent=self.agent,
            mode=mode,
            timeout_ms=self.timeout_ms,
            budget=Budget(self.max_cost_usd),
            idle_timeout_s=self.idle_timeout_secs,
            description=self.description or "",
            token=token,
        )


class GatewayConfig(Strict):
    """The whole file. With no agents at all, one offline agent named ``assistant`` answers."""

    gateway: ServerConfig = Field(default_factory=ServerConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    swarm: SwarmConfig = Field(default_factory=SwarmConfig)
    router: RouterConfig = Field(default_factory=RouterConfig)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    stores: StoresConfig = Field(default_factory=StoresConfig)
    peers: PeersConfig = Field(default_factory=PeersConfig)
    security: SecurityConfig = Field(default_factory=SecurityConfig)
    agents: list[AgentConfig] = Field(default_factory=list)
    tools: list[ToolConfig] = Field(default_factory=list)

    def provider_table(self) -> dict[str, ProviderSettings]:
        return {name: entry.settings() for name, entry in self.providers.items()}

    @property
    def starting_agent(self) -> str:
        if self.swarm.starting_agent is not None:
            return self.swarm.starting_agent
        return self.agents[0].name if self.agents else defaults.STARTING_AGENT_NAME

    def with_default_agent(self) -> GatewayConfig:
        """This config, plus the default agent when it defines none."""
        if self.agents:
            return self
        default = AgentConfig(name=defaults.STARTING_AGENT_NAME, instructions=defaults.STARTING_AGENT_INSTRUCTIONS)
        return self.model_copy(update={"agents": [default]})

    def store_path(self, spec: str, default_file: str) -> str | None:
        """The SQLite file a store spec names (``sqlite`` alone: ``data_dir/default_file``); None for memory, Redis."""
        if spec == "memory" or spec.lower().startswith(REDIS_SCHEMES):
            return None
        if spec == "sqlite":
            return str(Path(self.gateway.data_dir) / default_file)
        return spec.removeprefix("sqlite:")


def check_agent_url(url: str) -> str:
    """An agent registered by URL speaks the A2A binding over http(s); anything else is refused with the reason."""
    if not url.lower().startswith(("http://", "https://")):
        raise ValueError(
            f"{url!r} is not an http:// or https:// URL; agents registered by URL speak the A2A binding over HTTP"
        )
    try:
        parse_agent_uri(url)
    except InvalidAgentURI as exc:
        raise ValueError(str(exc)) from None
    return url


def _env_name(value: str, what: str) -> str:
    if not _ENV_NAME.match(value):
        raise ValueError(f"{value!r} is not an environment variable name (the {what} itself goes in the environment)")
    return value
