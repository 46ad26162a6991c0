"""swarm's client on the Runner: Agent() and its functions list, a stream of swarm's chunks, the run options,
the conversation handed back in, and what a call that cannot run is told."""

from __future__ import annotations

from typing import Any

import pytest

from gateway import Agent, Swarm
from gateway.errors import ScriptExhaustedError
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.swarm.compat import Response, Result
from gateway.tools import FunctionTool


def call(name: str, **arguments: Any) -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(id=f"call_{name}", name=name, arguments=arguments)])


def say(text: str) -> ModelResponse:
    return ModelResponse(content=text)


def hello(who):
    """Greet someone."""
    return f"hello {who}"


def wave():
    return "waved"


def test_agent_takes_swarms_defaults_and_functions_are_its_tools() -> None:
    agent = Agent()
    assert (agent.name, agent.instructions, agent.tool_choice, agent.parallel_tool_calls) == (
        "Agent",
        "You are a helpful agent.",
        None,
        True,
    )
    agent.functions.append(hello)
    assert agent.functions is agent.tools
    assert isinstance(agent.tools[0], FunctionTool)
    assert agent.tools[0].spec.parameters == {
        "type": "object",
        "properties": {"who": {"type": "string"}},
        "required": ["who"],
    }
    agent.functions += [hello]  # one tool per name: the one added last
    agent.tools.insert(0, wave)
    assert [t.name for t in agent.functions] == ["wave", "hello"]


def test_a_stream_is_swarms_chunks_then_the_response() -> None:
    model = ScriptedModel([call("hello", who="Ana"), say("Said hello.")])
    agent = Agent(model=model, functions=[hello])
    chunks = list(Swarm().run(agent, [{"role": "user", "content": "greet Ana"}], stream=True))
    *streamed, last = chunks
    assert streamed[:4] == [
        {"delim": "start"},
        {"role": "assistant", "sender": "Agent", "content": None},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_hello",
                    "type": "function",
                    "function": {"name": "hello", "arguments": '{"who":"Ana"}'},
                }
            ]
        },
        {"delim": "end"},
    ]
    answer = streamed[4:]
    assert answer[0] == {"delim": "start"}
    assert answer[1]["sender"] == "Agent"
    assert answer[-1] == {"delim": "end"}
    assert "".join(chunk["content"] for chunk in answer[1:-1]) == "Said hello."
    response = last["response"]
    assert isinstance(response, Response)
    assert [m["role"] for m in response.messages] == ["assistant", "tool", "assistant"]
    assert response.messages[1]["content"] == "hello Ana"
    assert response.agent is agent


def test_a_stream_left_early_ends_its_turn_and_the_next_run_starts_clean() -> None:
    agent = Agent(model=ScriptedModel([say("first"), say("second")]))
    client = Swarm()
    chunks = client.run(agent, [{"role": "user", "content": "hi"}], stream=True)
    assert next(chunks) == {"delim": "start"}
    chunks.close()
    assert client.run(agent, [{"role": "user", "content": "again"}]).messages[-1]["content"] == "second"


def test_the_conversation_so_far_is_the_history_and_only_new_messages_come_back() -> None:
    model = ScriptedModel([call("hello", who="Bo"), say("Done.")])
    agent = Agent(model=model, functions=[hello])
    client = Swarm()
    first = client.run(agent, [{"role": "user", "content": "greet Bo"}], context_variables={"n": 1})
    messages = [{"role": "user", "content": "greet Bo"}, *first.messages, {"role": "user", "content": "thanks"}]
    model_two = ScriptedModel([say("You are welcome.")])
    agent.model = model_two
    second = client.run(first.agent, messages, context_variables=first.context_variables)
    assert [m["role"] for m in model_two.calls[0].messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert [m["content"] for m in second.messages] == ["You are welcome."]
    assert second.context_variables == {"n": 1}


def test_a_result_updates_context_variables_and_a_chat_model_as_client_serves_every_agent() -> None:
    def remember(context_variables: dict) -> Result:
        return Result(value="kept", context_variables={"seen": context_variables["n"] + 1})

    client = Swarm(client=ScriptedModel([call("remember"), say("ok")]))
    variables = {"n": 1}
    response = client.run(Agent(functions=[remember]), [{"role": "user", "content": "x"}], variables)
    assert response.context_variables == {"n": 1, "seen": 2}
    assert variables == {"n": 1}


def test_max_turns_and_execute_tools_end_the_run_early() -> None:
    agent = Agent(model=ScriptedModel([call("hello", who="Cy"), say("never")]), functions=[hello])
    held = Swarm().run(agent, [{"role": "user", "content": "greet Cy"}], execute_tools=False)
    assert held.messages[0]["tool_calls"][0]["function"]["name"] == "hello"
    assert held.agent is agent

    limited = Agent(model=ScriptedModel([call("hello", who="Di"), say("never")]), functions=[hello])
    response = Swarm().run(limited, [{"role": "user", "content": "greet Di"}], max_turns=1)
    assert [m["role"] for m in response.messages] == ["assistant", "tool"]


def test_a_call_that_cannot_run_says_what_to_change() -> None:
    with pytest.raises(ValueError, match="user's message last"):
        Swarm().run(Agent(), [])
    with pytest.raises(TypeError, match="OPENAI_BASE_URL"):
        Swarm(client=object())  # type: ignore[arg-type]


def test_a_turn_that_fails_raises_from_run_and_from_its_stream() -> None:
    agent = Agent(model=ScriptedModel([]))
    with pytest.raises(ScriptExhaustedError):
        Swarm().run(agent, [{"role": "user", "content": "hi"}])
    with pytest.raises(ScriptExhaustedError):
        list(Swarm().run(agent, [{"role": "user", "content": "hi"}], stream=True))
