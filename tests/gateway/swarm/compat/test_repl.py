"""swarm's run_demo_loop: lines read are turns, answers printed agent by agent, the agent and context carried
from one line to the next, end of input leaves the loop. Input is patched; the model is a ScriptedModel."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from gateway import Agent, run_demo_loop
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.swarm.compat import Result

_COLOURS = re.compile(r"\033\[[0-9;]*m")


def typed(monkeypatch: pytest.MonkeyPatch, *lines: str) -> list[str]:
    """``input()`` answers ``lines`` in order, then the end of input (Ctrl-D); returns the prompts it was shown."""
    prompts: list[str] = []
    answers: Iterator[str] = iter(lines)

    def fake_input(prompt: str = "") -> str:
        prompts.append(prompt)
        try:
            return next(answers)
        except StopIteration:
            raise EOFError from None

    monkeypatch.setattr("builtins.input", fake_input)
    return prompts


def swarm_of_two() -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(
        [
            ModelResponse(tool_calls=[ToolCall(id="call_1", name="to_billing", arguments={})]),
            ModelResponse(content="Billing here."),
            ModelResponse(content="Your plan is gold."),
        ]
    )
    billing = Agent(name="Billing", instructions=lambda variables: f"Plan {variables['plan']}", model=model)

    def to_billing(context_variables: dict) -> Result:
        """Send billing questions to billing."""
        return Result(value="ok", agent=billing, context_variables={"plan": "gold"})

    return Agent(name="Triage", model=model, functions=[to_billing]), model


@pytest.mark.parametrize("stream", [False, True], ids=["printed", "streamed"])
def test_the_demo_loop_carries_the_agent_and_context_until_input_ends(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stream: bool
) -> None:
    prompts = typed(monkeypatch, "my bill please", "which plan?")
    triage, model = swarm_of_two()

    run_demo_loop(triage, context_variables={"user": "ana"}, stream=stream)

    assert len(prompts) == 3
    assert _COLOURS.sub("", prompts[0]) == "User: "
    screen = _COLOURS.sub("", capsys.readouterr().out)
    assert "Triage: to_billing()" in screen
    assert "Billing: Billing here.\n" in screen
    assert "Billing: Your plan is gold.\n" in screen
    assert model.calls[2].messages[0]["content"] == "Plan gold"  # the second line went to Billing, with its context
    assert [m["role"] for m in model.calls[2].messages[1:]] == ["user", "assistant", "tool", "assistant", "user"]
