"""Tokens and cost of a run, per agent, added up from its events as they are recorded.

A local agent's usage comes from its ``model_call`` events (the tokens and cost its
provider reported); a remote agent's from the ``cost_usd`` of its ``message`` events (it
reports no tokens). ``run_completed`` carries the totals (``usage_by_agent``) and
``GET /runs/{id}`` reads them back from the same events (summary.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.recording.events import Event, MessageEvent, ModelCallEvent


@dataclass
class AgentUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_calls: int = 0
    cost_usd: float = 0.0

    def to_wire(self) -> dict[str, float]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "model_calls": self.model_calls,
            "cost_usd": round(self.cost_usd, 10),
        }


class RunUsage:
    """The running totals of one run, by agent name, in the order the agents first spent something."""

    def __init__(self) -> None:
        self.agents: dict[str, AgentUsage] = {}

    def add(self, event: Event) -> None:
        if type(event) is ModelCallEvent:
            usage = self._of(event.agent)
            usage.model_calls += 1
            usage.prompt_tokens += event.prompt_tokens or 0
            usage.completion_tokens += event.completion_tokens or 0
            usage.cost_usd += event.cost_usd or 0.0
        elif type(event) is MessageEvent and event.remote:
            self._of(event.agent).cost_usd += event.cost_usd or 0.0

    def by_agent(self) -> dict[str, dict[str, float]]:
        return {name: usage.to_wire() for name, usage in self.agents.items()}

    def _of(self, agent: str) -> AgentUsage:
        usage = self.agents.get(agent)
        if usage is None:
            usage = self.agents[agent] = AgentUsage()
        return usage
