"""The agent card: what an agent serves at /.well-known/agent-card.json (and agent.json), in the reader's version.

The model holds both versions' fields: A2A v1.0 clients read ``supportedInterfaces`` (the
NDJSON binding first, as a custom binding named by ``NDJSON_BINDING``, then JSON-RPC 1.0 and
0.3 at the same URL, then HTTP+JSON 1.0 under ``REST_PATH``, apart from the NDJSON binding's
``/tasks/*`` paths, then gRPC where it is served) and ``securityRequirements``; v0.3 clients
read ``url``, ``preferredTransport``, ``protocolVersion``, ``additionalInterfaces``,
``security`` and ``supportsAuthenticatedExtendedCard``.
``for_reader`` spells it for one reader: a v1.0 reader gets the v1.0 AgentCard alone (its
schema allows no other field), a v0.3 one the card of both versions (v0.3 readers ignore
the v1.0 fields, and the a2a-sdk's own v0.3 client reads ``supportedInterfaces`` first).
``reader_version`` says which a request is. The model also reads the cards other agents
serve, of any of these versions (``interfaces()``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from pydantic import Field

from protocol._wire import WireModel
from protocol.hop_limits import HOP_LIMITS_DESCRIPTION, HOP_LIMITS_EXTENSION

NDJSON_BINDING = "urn:switchboard:a2a-ndjson"
"""The ``protocolBinding`` naming Switchboard's own binding (per-method paths, NDJSON streams)."""
NDJSON_BINDING_VERSION = "1.0"
JSONRPC_BINDING = "JSONRPC"
HTTP_JSON_BINDING = "HTTP+JSON"
REST_PATH = "/a2a/rest"
"""Where a Switchboard server speaks HTTP+JSON: its own base path, since ``GET /tasks/{id}`` is the NDJSON binding's."""
GRPC_BINDING = "GRPC"
A2A_V1 = "1.0"
A2A_V03 = "0.3"
BEARER_SCHEME = "bearer"
DEFAULT_INPUT_MODES = ("text/plain", "application/json")
DEFAULT_OUTPUT_MODES = ("text/plain", "application/json")


class AgentInterface(WireModel):
    """One way to reach the agent (A2A v1.0): a URL, the binding spoken there and the protocol version."""

    url: str
    protocol_binding: str
    protocol_version: str | None = None
    tenant: str | None = None


class LegacyInterface(WireModel):
    """An entry of a v0.3 card's ``additionalInterfaces``."""

    url: str
    transport: str


class AgentExtension(WireModel):
    """An A2A extension the agent supports: its URI, what it does here, whether a client must use it."""

    uri: str
    description: str | None = None
    required: bool | None = None
    params: dict[str, Any] | None = None


_HOP_LIMITS = AgentExtension(uri=HOP_LIMITS_EXTENSION, description=HOP_LIMITS_DESCRIPTION, required=False)
"""Every Switchboard server takes the deadline and budget of its callers (protocol/hop_limits.py)."""


class AgentCapabilities(WireModel):
    streaming: bool = True
    push_notifications: bool = False
    state_transition_history: bool = True
    extended_agent_card: bool | None = None
    extensions: list[AgentExtension] | None = None


class AgentSkill(WireModel):
    id: str
    name: str
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    examples: list[str] = Field(default_factory=list)
    input_modes: list[str] | None = None
    output_modes: list[str] | None = None


class AgentCard(WireModel):
    name: str
    description: str | None = None
    supported_interfaces: list[AgentInterface] = Field(default_factory=list)
    url: str | None = None
    preferred_transport: str | None = None
    protocol_version: str | None = None
    additional_interfaces: list[LegacyInterface] | None = None
    version: str = "0.1.0"
    provider: dict[str, Any] | None = None
    documentation_url: str | None = None
    icon_url: str | None = None
    capabilities: AgentCapabilities = Field(default_factory=AgentCapabilities)
    default_input_modes: list[str] = Field(default_factory=lambda: list(DEFAULT_INPUT_MODES))
    default_output_modes: list[str] = Field(default_factory=lambda: list(DEFAULT_OUTPUT_MODES))
    skills: list[AgentSkill] = Field(default_factory=list)
    security_schemes: dict[str, dict[str, Any]] | None = None
    security: list[dict[str, list[str]]] | None = None
    security_requirements: list[dict[str, Any]] | None = None
    supports_authenticated_extended_card: bool | None = None

    @classmethod
    def standard(
        cls,
        *,
        name: str,
        url: str,
        description: str = "",
        skills: list[AgentSkill] | None = None,
        input_modes: list[str] | None = None,
        output_modes: list[str] | None = None,
    ) -> AgentCard:
        """The card of an agent served at ``url`` by a Switchboard server, for readers of every version.

        A2A 1.0 requires a description, and at least one skill, each with a description and
        tags: an agent without a description is described by its name, one that names no skill
        is one skill of its own name, and a skill without them gets its name as description and
        its id as tag.
        """
        description = description or f"The agent {name!r}."
        return cls(
            name=name,
            description=description,
            supported_interfaces=[
                AgentInterface(url=url, protocol_binding=NDJSON_BINDING, protocol_version=NDJSON_BINDING_VERSION),
                AgentInterface(url=url, protocol_binding=JSONRPC_BINDING, protocol_version=A2A_V1),
                AgentInterface(url=url, protocol_binding=JSONRPC_BINDING, protocol_version=A2A_V03),
                AgentInterface(url=url + REST_PATH, protocol_binding=HTTP_JSON_BINDING, protocol_version=A2A_V1),
            ],
            url=url,
            preferred_transport=JSONRPC_BINDING,
            protocol_version=A2A_V03,
            additional_interfaces=[
                LegacyInterface(url=url, transport=JSONRPC_BINDING),
                LegacyInterface(url=url, transport=NDJSON_BINDING),
            ],
            skills=[_complete(skill) for skill in skills or [AgentSkill(id=name, name=name, description=description)]],
            default_input_modes=list(input_modes or DEFAULT_INPUT_MODES),
            default_output_modes=list(output_modes or DEFAULT_OUTPUT_MODES),
            capabilities=AgentCapabilities(extensions=[_HOP_LIMITS]),
        )

    def with_bearer_auth(self) -> AgentCard:
        """This card, saying that every call needs ``Authorization: Bearer <token>`` (in both spellings)."""
        return self.model_copy(
            update={
                "security_schemes": {
                    BEARER_SCHEME: {"type": "http", "scheme": "bearer", "httpAuthSecurityScheme": {"scheme": "bearer"}}
                },
                "security": [{BEARER_SCHEME: []}],
                "security_requirements": [{"schemes": {BEARER_SCHEME: {"list": []}}}],
            }
        )

    def offering(self, *, push_notifications: bool, extended_card: bool) -> AgentCard:
        """This card, saying whether the agent delivers push notifications and has an extended card for
        authenticated callers (``capabilities.extendedAgentCard``, in v0.3 ``supportsAuthenticatedExtendedCard``)."""
        capabilities = self.capabilities.model_copy(
            update={"push_notifications": push_notifications, "extended_agent_card": extended_card or None}
        )
        return self.model_copy(
            update={"capabilities": capabilities, "supports_authenticated_extended_card": extended_card or None}
        )

    def with_grpc(self, address: str, *, tenant: str | None = None) -> AgentCard:
        """This card, offering A2A 1.0 over gRPC at ``address`` (``host:port``, as a gRPC channel names its target);
        ``tenant``: what the requests name to reach this agent there, when the endpoint serves several."""
        grpc = AgentInterface(url=address, protocol_binding=GRPC_BINDING, protocol_version=A2A_V1, tenant=tenant)
        return self.model_copy(update={"supported_interfaces": [*self.supported_interfaces, grpc]})

    def for_reader(self, version: str) -> dict[str, Any]:
        """The card on the wire for a reader of ``version`` (``reader_version``): v1.0 alone, or both versions."""
        wire = self.to_wire()
        if version != A2A_V1:
            return wire
        for key in _V03_FIELDS:
            wire.pop(key, None)
        wire["capabilities"].pop("stateTransitionHistory", None)
        if "securitySchemes" in wire:
            wire["securitySchemes"] = {
                name: {key: value for key, value in scheme.items() if key in _V1_SCHEME_KINDS}
                for name, scheme in wire["securitySchemes"].items()
            }
        return wire

    def interfaces(self) -> list[AgentInterface]:
        """Every interface the card declares: ``supportedInterfaces``, or those a v0.3 card names.

        A v0.3 card's ``url`` speaks its ``preferredTransport`` (JSON-RPC when absent) at its
        ``protocolVersion``; each ``additionalInterfaces`` entry speaks its own transport. A card
        with neither (an older Switchboard agent's) declares nothing.
        """
        if self.supported_interfaces:
            return list(self.supported_interfaces)
        if self.url is None or (self.preferred_transport is None and self.protocol_version is None):
            return []
        version = self.protocol_version or A2A_V03
        main = AgentInterface(
            url=self.url, protocol_binding=self.preferred_transport or JSONRPC_BINDING, protocol_version=version
        )
        more = [
            AgentInterface(url=extra.url, protocol_binding=extra.transport, protocol_version=version)
            for extra in self.additional_interfaces or []
        ]
        return [main, *more]


_V03_FIELDS = (
    "url",
    "preferredTransport",
    "protocolVersion",
    "additionalInterfaces",
    "security",
    "supportsAuthenticatedExtendedCard",
)
"""What only a v0.3 card has (``capabilities.stateTransitionHistory`` too)."""
_V1_SCHEME_KINDS = frozenset(
    {
        "apiKeySecurityScheme",
        "httpAuthSecurityScheme",
        "oauth2SecurityScheme",
        "openIdConnectSecurityScheme",
        "mtlsSecurityScheme",
    }
)
"""A v1.0 security scheme is exactly one of these; the v0.3 spelling (``type``, ``scheme``, ...) sits beside it."""


def reader_version(asked: str | None) -> str:
    """Which card a request for it gets, from the ``A2A-Version`` it sends (header or query parameter).

    A2A 1.0 and later (and any version this project does not know, newer ones included:
    the v1.0 card tells them what is spoken here) get the v1.0 card. No version, an empty or
    unreadable one, or 0.x is a v0.3 reader, as the specification reads a request without
    the header (3.6.2: an empty value is 0.3); a v1.0 client sends the header (3.6.1), and
    the a2a-sdk client does when it fetches a card.
    """
    version = major_minor(asked)
    if version is None or version.startswith("0."):
        return A2A_V03
    return A2A_V1


def _complete(skill: AgentSkill) -> AgentSkill:
    """The skill with the fields A2A 1.0 requires filled in where they are empty."""
    return skill.model_copy(update={"description": skill.description or skill.name, "tags": skill.tags or [skill.id]})


def grpc_address(url: str, port: int) -> str:
    """``host:port`` of a gRPC server on ``port`` of the host that ``url`` names (an IPv6 host in brackets)."""
    host = urlsplit(url).hostname or "127.0.0.1"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def major_minor(version: str | None) -> str | None:
    """``"1.0.2"`` -> ``"1.0"``, ``"0.3"`` -> ``"0.3"``; None for what is not ``MAJOR.MINOR[.PATCH]``."""
    parts = (version or "").strip().split(".")
    if len(parts) < 2 or not all(part.isdigit() for part in parts[:3]) or len(parts) > 3:
        return None
    return f"{int(parts[0])}.{int(parts[1])}"
