"""What a turn does when something goes wrong: tool errors and bad arguments, a model that fails,
a caller that cancels, a remote member that falls silent; and what each turn hands back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from agent_server import HostedAgent
from gateway import Agent, Gateway, Runner, ToolResult, tool
from gateway.errors import AgentToolTimeout
from gateway.models import ModelResponse, ScriptedModel, ScriptExhaustedError, ToolCall

pytestmark = pytest.mark.anyio


def _calls(*calls: ToolCall) -> ModelResponse:
    return ModelResponse(tool_calls=list(calls))


async def _last_event(runner: Runner) -> str:
    """The last event of the runner's only run so far."""
    [run_id] = await runner.event_log.list_runs()
    return (await runner.event_log.read(run_id))[-1].type


async def test_response_messages_are_the_turns_new_messages_without_the_user_message() -> None:
    agent = Agent("A", model=ScriptedModel([ModelResponse(content="hi"), ModelResponse(content="again")]))
    runner = Runner(agent)
    first = await runner.run_async("s", "hello")
    second = await runner.run_async("s", "more")
    assert [(m["role"], m["content"]) for m in first.messages] == [("assistant", "hi")]
    assert [(m["role"], m["content"]) for m in second.messages] == [("assistant", "again")]
    history = (await runner.session_store.load("s")).history
    assert [m["content"] for m in history] == ["hello", "hi", "more", "again"]


async def test_a_tool_cannot_change_the_session_context_by_mutating_it_in_place() -> None:
    @tool
    def add_to_cart(item: str, context_variables: dict[str, Any]) -> ToolResult:
        """Add an item to the cart."""
        context_variables["cart"].append("mutated in place")
        return ToolResult(value="added", context_variables={"cart": [*context_variables["cart"][:-1], item]})

    @tool
    def peek(context_variables: dict[str, Any]) -> str:
        """Look at the cart."""
        context_variables["cart"].append("lost")
        return ",".join(context_variables["cart"])

    model = ScriptedModel(
        [
            _calls(ToolCall("c1", "add_to_cart", {"item": "book"}), ToolCall("c2", "peek", {})),
            ModelResponse(content="done"),
        ]
    )
    runner = Runner(Agent("Shop", tools=[add_to_cart, peek], model=model))
    response = await runner.run_async("s", "buy", context_variables={"cart": []})
    assert response.context_variables == {"cart": ["book"]}
    assert (await runner.session_store.load("s")).context_variables == {"cart": ["book"]}


async def test_bad_arguments_from_the_model_become_error_results_and_the_turn_goes_on() -> None:
    @tool
    def refund(order_id: str, amount: float) -> str:
        """Refund."""
        return "refunded"

    model = ScriptedModel(
        [
            _calls(
                ToolCall("c1", "refund", {"order_id": "O-1", "amount": "lots"}),
                ToolCall("c2", "refund", {"_raw": '{"order_id": "O-'}),
                ToolCall("c3", "refund", {}),
            ),
            ModelResponse(content="Could you give me the amount?"),
        ]
    )
    response = await Runner(Agent("A", tools=[refund], model=model)).run_async("s", "refund")
    results = [m["content"] for m in response.messages if m["role"] == "tool"]
    assert results[0].startswith("Error: ToolArgumentError:") and "'amount'" in results[0]
    assert "not valid JSON" in results[1]
    assert "'order_id' is required but missing" in results[2]
    assert response.content == "Could you give me the amount?"


async def test_a_model_error_after_a_handoff_fails_the_turn_and_saves_only_its_input() -> None:
    billing = Agent("Billing", model=ScriptedModel([]))
    triage = Agent(
        "Triage",
        model=ScriptedModel([_calls(ToolCall("t", "transfer_to_billing", {})), ModelResponse(content="Triage.")]),
        handoffs=[billing],
    )
    runner = Runner(triage)
    with pytest.raises(ScriptExhaustedError):
        await runner.run_async("s", "refund", context_variables={"customer": "Ada"})
    session = await runner.session_store.load("s")
    assert (session.active_agent, session.open_run, session.context_variables) == (None, None, {"customer": "Ada"})
    assert session.history == [{"role": "user", "content": "refund"}]
    assert await _last_event(runner) == "run_failed"
    again = await runner.run_async("s", "hello")
    assert (again.active_agent_name, again.content) == ("Triage", "Triage.")


async def test_cancelling_a_turn_mid_tool_releases_the_session_and_records_the_failure() -> None:
    started = anyio.Event()

    @tool
    async def slow() -> str:
        """Takes forever."""
        started.set()
        await anyio.sleep_forever()
        return "never"

    model = ScriptedModel([_calls(ToolCall("c", "slow", {})), ModelResponse(content="second turn")])
    runner = Runner(Agent("A", tools=[slow], model=model))
    async with anyio.create_task_group() as group:
        group.start_soon(runner.run_async, "s", "one")
        await started.wait()
        group.cancel_scope.cancel()
    assert await _last_event(runner) == "run_failed"
    with anyio.fail_after(10):
        response = await runner.run_async("s", "two")
    assert response.content == "second turn"
    session = await runner.session_store.load("s")
    assert [m["content"] for m in session.history if m["role"] == "user"] == ["one", "two"]
    assert session.open_run is None


def _silent_agent(cancelled: anyio.Event) -> HostedAgent:
    async def silent(ctx: Any) -> AsyncIterator[str]:
        try:
            yield "Looking into it... "
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    return HostedAgent("silent", silent, description="Never finishes.")


@pytest.mark.parametrize("streaming", [True, False])
async def test_a_remote_member_that_falls_silent_times_out_and_frees_the_session(streaming: bool) -> None:
    cancelled = anyio.Event()
    async with Gateway() as gateway:
        uri = gateway.register_local_agent("silent", _silent_agent(cancelled))
        triage = Agent(
            "triage",
            model=ScriptedModel(
                [_calls(ToolCall("t", "transfer_to_silent", {})), ModelResponse(content="Front desk.")]
            ),
        )
        runner = Runner(triage, gateway=gateway)
        silent = await runner.register_remote(uri)
        silent.streaming, silent.timeout_s, silent.idle_timeout_s = streaming, 0.3, 0.3
        triage.add_handoff(silent)
        with anyio.fail_after(10), pytest.raises(AgentToolTimeout) as caught:
            await runner.run_async("s", "help")
        assert caught.value.reason == ("idle_timeout" if streaming else "timeout")
        assert await _last_event(runner) == "run_failed"
        session = await runner.session_store.load("s")
        assert (session.active_agent, session.history) == (None, [{"role": "user", "content": "help"}])
        with anyio.fail_after(10):  # the remote task is cancelled in both modes (the runner mints its id)
            await cancelled.wait()
        with anyio.fail_after(10):
            triage.remove_handoff("silent")
            assert (await runner.run_async("s", "hello")).content == "Front desk."


async def test_a_cancelled_turn_says_why_when_the_canceller_gave_a_reason() -> None:
    started = anyio.Event()

    @tool
    async def wait() -> str:
        """Wait for ever."""
        started.set()
        await anyio.sleep_forever()
        return ""

    agent = Agent("A", tools=[wait], model=ScriptedModel([_calls(ToolCall("w", "wait", {}))]))
    runner = Runner(agent)
    async with anyio.create_task_group() as group:
        group.start_soon(runner.run_async, "s", "go")
        await started.wait()
        group.cancel_scope.cancel("the gateway is shutting down")
    [run_id] = await runner.event_log.list_runs()
    failed = (await runner.event_log.read(run_id))[-1]
    # anyio has no public accessor for the reason; this pins the message format swarm/fallback.py reads
    assert (failed.type, failed.fields["error"]) == ("run_failed", "cancelled: the gateway is shutting down")


def test_an_agent_without_a_model_is_not_changed_by_asking_for_it() -> None:
    agent = Agent("A")
    assert type(agent.get_model()).__name__ == agent.model_name == "OfflineModel"
    assert agent.model is None
