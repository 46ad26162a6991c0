"""The extended agent card: what a caller with a valid token learns beyond the public card (``GetExtendedAgentCard``).

An operator may tell its own callers more than everyone: a fuller description, skills the
public card does not list. The public card says such a card exists
(``capabilities.extendedAgentCard``; v0.3 ``supportsAuthenticatedExtendedCard``), and only a
caller the server's tokens know gets it, so a server offering one must have a token.
Everything else (interfaces, security, capabilities) is the public card's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from protocol.card import AgentCard, AgentSkill


@dataclass(frozen=True)
class ExtendedCard:
    """``description`` replaces the public one (when given); ``skills`` come after the public card's."""

    description: str | None = None
    skills: tuple[AgentSkill, ...] = ()

    @classmethod
    def of(
        cls, *, description: str | None = None, skills: Sequence[AgentSkill | Mapping[str, Any]] = ()
    ) -> ExtendedCard:
        """Skills may be given as mappings (``{"id", "name", "description", "tags"}``)."""
        return cls(description, tuple(AgentSkill.model_validate(skill) for skill in skills))

    def applied_to(self, card: AgentCard) -> AgentCard:
        known = {skill.id for skill in card.skills}
        extra = [skill for skill in self.skills if skill.id not in known]
        return card.model_copy(
            update={"description": self.description or card.description, "skills": [*card.skills, *extra]}
        )
