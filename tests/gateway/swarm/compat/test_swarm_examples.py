"""OpenAI swarm's basic examples, written as swarm code with only the import line changed, run as scripts.

Each script (tests/support/seeds/swarm_*.py) makes ``Swarm()`` and agents without a model, as
swarm's do: here that is the offline model, or a ScriptedModel put in its place where the
example needs a model that follows a script (a Spanish greeting names no tool).
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import orjson
import pytest

from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.swarm import agent as agent_module

SEEDS = Path(__file__).resolve().parents[3] / "support" / "seeds"


def run_example(name: str) -> dict[str, Any]:
    """The example's module globals after it ran (its ``response``, its agents, its variables)."""
    return runpy.run_path(str(SEEDS / f"swarm_{name}.py"))


def scripted(monkeypatch: pytest.MonkeyPatch, *steps: ModelResponse) -> ScriptedModel:
    """The model of every agent that names none, for this test (the offline model otherwise)."""
    model = ScriptedModel(list(steps))
    monkeypatch.setattr(agent_module, "_default_model", lambda: model)
    return model


def test_bare_minimum_answers_from_the_agent_it_was_given(capsys: pytest.CaptureFixture[str]) -> None:
    example = run_example("bare_minimum")
    response = example["response"]
    assert [m["role"] for m in response.messages] == ["assistant"]
    assert response.messages[-1]["sender"] == "Agent"
    assert response.messages[-1]["tool_calls"] is None
    assert response.agent is example["agent"]
    assert response.context_variables == {}
    assert example["messages"] == [{"role": "user", "content": "Hi!"}]  # the caller's list is not touched
    assert capsys.readouterr().out == f"{response.messages[-1]['content']}\n"


def test_an_untyped_parameter_is_a_string_the_offline_model_can_fill(capsys: pytest.CaptureFixture[str]) -> None:
    example = run_example("function_calling")
    response = example["response"]
    assert [m["role"] for m in response.messages] == ["assistant", "tool", "assistant"]
    call = response.messages[0]["tool_calls"][0]["function"]
    assert call["name"] == "get_weather"
    assert orjson.loads(call["arguments"]) == {"location": "What's the weather in NYC?"}
    assert response.messages[1]["tool_name"] == "get_weather"
    assert response.messages[1]["content"] == "{'temp':21, 'unit':'C'}"
    assert "21" in capsys.readouterr().out


def test_context_variables_render_the_instructions_and_reach_the_function(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = scripted(
        monkeypatch,
        ModelResponse(content="Hello, James!"),
        ModelResponse(tool_calls=[ToolCall(id="call_1", name="print_account_details", arguments={})]),
        ModelResponse(content="Your account details are printed."),
    )
    example = run_example("context_variables")
    response = example["response"]

    assert model.calls[0].messages[0] == {
        "role": "system",
        "content": "You are a helpful agent. Greet the user by name (James).",
    }
    assert [spec.name for spec in model.calls[0].tools] == ["print_account_details"]
    assert model.calls[0].tools[0].parameters["properties"] == {}  # context_variables is hidden from the model
    assert [m["role"] for m in response.messages] == ["assistant", "tool", "assistant"]
    assert response.messages[1]["content"] == "Success"
    assert response.messages[-1] == {
        "role": "assistant",
        "content": "Your account details are printed.",
        "sender": "Agent",
        "tool_calls": None,
    }
    assert response.agent is example["agent"]
    assert response.context_variables == {"name": "James", "user_id": 123}
    assert capsys.readouterr().out == "Hello, James!\nAccount details: James 123\nYour account details are printed.\n"


def test_a_function_appended_to_functions_hands_the_conversation_off(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = scripted(
        monkeypatch,
        ModelResponse(tool_calls=[ToolCall(id="call_1", name="transfer_to_spanish_agent", arguments={})]),
        ModelResponse(content="¡Hola! Estoy bien, ¿y tú?"),
    )
    example = run_example("agent_handoff")
    response = example["response"]

    assert [spec.name for spec in model.calls[0].tools] == ["transfer_to_spanish_agent"]
    assert model.calls[1].messages[0]["content"] == "You only speak Spanish."
    assert [(m["role"], m.get("sender")) for m in response.messages] == [
        ("assistant", "English Agent"),
        ("tool", None),
        ("assistant", "Spanish Agent"),
    ]
    assert orjson.loads(response.messages[1]["content"])["assistant"] == "Spanish Agent"
    assert response.agent is example["spanish_agent"]
    assert response.context_variables == {}
    assert capsys.readouterr().out == "¡Hola! Estoy bien, ¿y tú?\n"
