"""How a runner finds transfer targets nothing registered is one value, ``TargetPolicy``: given as
``Runner(targets=...)``, or built from the ``resolve_uris``/``dynamic_agents`` keywords."""

from __future__ import annotations

import pytest

from gateway import Agent, AgentHandoffError, Runner
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.swarm import TargetPolicy

pytestmark = pytest.mark.anyio


def test_the_keywords_and_the_value_say_the_same_thing() -> None:
    agent = Agent("A")
    assert Runner(agent).targets == TargetPolicy(connect_uris=True, adopt_agents=True)
    keywords = Runner(agent, resolve_uris=False, dynamic_agents=False)
    assert keywords.targets == TargetPolicy(connect_uris=False, adopt_agents=False)
    assert keywords.resolve_uris is False
    value = Runner(agent, targets=TargetPolicy(connect_uris=False))
    assert (value.resolve_uris, value.targets.adopt_agents) == (False, True)
    with pytest.raises(ValueError, match="not both"):
        Runner(agent, targets=TargetPolicy(), resolve_uris=True)


async def test_a_policy_that_adopts_no_agents_refuses_an_unregistered_one() -> None:
    stranger = Agent("Stranger", model=ScriptedModel([ModelResponse(content="hi")]))

    def go() -> Agent:
        """Go."""
        return stranger

    go_call = ToolCall(id="c1", name="go", arguments={})
    triage = Agent("Triage", functions=[go], model=ScriptedModel([ModelResponse(tool_calls=[go_call])]))
    with pytest.raises(AgentHandoffError, match="dynamic agents are off"):
        await Runner(triage, targets=TargetPolicy(adopt_agents=False)).run_async("s", "x")
