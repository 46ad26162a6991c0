"""The agent card: what an agent serves at /.well-known/agent-card.json (and agent.json), readable by every A2A version.

One card for every reader: A2A v1.0 clients read ``supportedInterfaces`` (the NDJSON
binding first, as a custom binding named by ``NDJSON_BINDING``, then JSON-RPC 1.0 and 0.3
at the same URL) and ``securityRequirements``; v0.3 clients read ``url``,
``preferredTransport``, ``protocolVersion``, ``additionalInterfaces`` and ``security``;
``securitySchemes`` carries both spellings of each scheme. The model also reads the cards
other agents serve, of any of these versions (``interfaces()``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from protocol._wire import WireModel

NDJSON_BINDING = "urn:switchboard:a2a-ndjson"
"""The ``protocolBinding`` naming Switchboard's own binding (per-method paths, NDJSON streams)."""
NDJSON_BINDING_VERSION = "1.0"
JSONRPC_BINDING = "JSONRPC"
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


class AgentCapabilities(WireModel):
    streaming: bool = True
    push_notifications: bool = False
    state_transition_history: bool = True
    extended_agent_card: bool | None = None


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


def _complete(skill: AgentSkill) -> AgentSkill:
    """The skill with the fields A2A 1.0 requires filled in where they are empty."""
    return skill.model_copy(update={"description": skill.description or skill.name, "tags": skill.tags or [skill.id]})


def major_minor(version: str | None) -> str | None:
    """``"1.0.2"`` -> ``"1.0"``, ``"0.3"`` -> ``"0.3"``; None for what is not ``MAJOR.MINOR[.PATCH]``."""
    parts = (version or "").strip().split(".")
    if len(parts) < 2 or not all(part.isdigit() for part in parts[:3]) or len(parts) > 3:
        return None
    return f"{int(parts[0])}.{int(parts[1])}"
