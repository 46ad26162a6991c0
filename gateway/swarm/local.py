"""A local agent's step: one call of its model with its tools, then the tool calls the model made.

The model is offered the agent's domain tools plus one ``transfer_to_*`` tool per handoff
(none once transfers are over for the turn, and no tools at all once the turn has used up
``max_tool_iterations``: it is told to answer, and tool calls it still makes are dropped).
With ``execute_tools=False`` its first tool calls end the turn instead of running.

Tool calls run ordinary tools first, one after another or all at once when the agent
allows parallel tool calls; results go into the history in the order the model asked.
The first transfer in the response (a ``transfer_to_*`` tool, or a tool that returned an
agent) is the step's ``Transfer``; later ones are answered with an explanation.
"""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, aclosing, nullcontext
from typing import Any

import anyio
import orjson

from gateway.errors import ModelNotConfigured
from gateway.models.base import ChatMessage, ChatModel, ModelResponse, TextDelta, ToolCall, ToolSpec, model_identity
from gateway.models.providers import Providers
from gateway.recording.events import EventType
from gateway.swarm.admission import ANSWER_NOW, Targets
from gateway.swarm.agent import Agent
from gateway.swarm.handoff import Handoff, TransferTool
from gateway.swarm.history_policy import HistoryPolicy, shown_to
from gateway.swarm.member import SwarmMember
from gateway.swarm.remote import RemoteAgent
from gateway.swarm.turn import FALLBACK_ANSWER, RunOptions, Step, Transfer, Turn, in_turn
from gateway.telemetry import spans
from gateway.tools import Tool, ToolResult
from protocol.handoff_names import sanitize_agent_name

TOOL_LIMIT_MESSAGE = "Maximum tool iterations exceeded for a single turn."
ONE_TRANSFER_MESSAGE = "Only the first transfer in a response is honoured; this one was not carried out."
NOT_RUN_MESSAGE = "Not run: this turn returned the call to its caller (execute_tools=False)."

_MODEL_KEYS = ("role", "content", "tool_calls", "tool_call_id")
_MODEL_NAME_CHARS = 64

Outcome = tuple[str, Handoff | SwarmMember | None, dict[str, Any]]
"""One tool call done: its result as text, the transfer it asks for (by name or as an agent), context updates."""


async def local_step(
    turn: Turn,
    agent: Agent,
    targets: Targets,
    *,
    providers: Providers,
    history: HistoryPolicy,
    max_tool_iterations: int,
) -> Step:
    """One model call of ``agent``, then its tool calls; see the module docstring."""
    tools = [t for t in agent.get_all_tools() if not _transfer_to_forgotten(t, targets.agents)]
    final = turn.tool_calls >= max_tool_iterations
    offered = [] if final else [t.spec for t in tools if not (turn.transfers_blocked and isinstance(t, TransferTool))]
    messages = await _model_messages(agent, turn, history)
    if final:
        messages.append({"role": "system", "content": f"{TOOL_LIMIT_MESSAGE} {ANSWER_NOW}"})
    response: ModelResponse | None = None
    async with aclosing(_respond(turn, agent, model_for(agent, turn.options, providers), messages, offered)) as items:
        async for item in items:
            if item is None:
                yield None
            else:
                response = item
    assert response is not None
    calls = [] if final else list(response.tool_calls)
    await turn.say(_assistant_message(agent.name, response.content, calls))
    if calls and not turn.options.execute_tools:
        for call in calls:
            await turn.tool_result(agent.name, call.id, call.name, NOT_RUN_MESSAGE)
        turn.pending_tool_calls = calls
        turn.finish(response.content)
    elif calls:
        transfer = await _run_tool_calls(
            turn, tools, calls, targets, max_tool_iterations, concurrently=agent.parallel_tool_calls
        )
        if transfer is not None:
            yield transfer
    else:
        turn.finish(response.content or (FALLBACK_ANSWER if final else ""))


def check_models(agents: dict[str, SwarmMember], options: RunOptions, providers: Providers) -> None:
    """Every local agent's model resolves (or the override does); ModelNotConfigured says what to set."""
    for agent in agents.values():
        if isinstance(agent, Agent):
            model_for(agent, options, providers)
        if options.model_override is not None:
            return


def model_for(agent: Agent, options: RunOptions, providers: Providers) -> ChatModel:
    """The model ``agent`` uses in this turn: the override, else its own; a name resolves through the providers."""
    chosen = options.model_override if options.model_override is not None else agent.model
    if not isinstance(chosen, str):
        return agent.get_model() if chosen is None else chosen
    try:
        return providers.chat_model(chosen)
    except ModelNotConfigured as exc:
        raise ModelNotConfigured(f"agent {agent.name!r}: {exc}") from None


async def _respond(
    turn: Turn, agent: Agent, model: ChatModel, messages: list[ChatMessage], offered: list[ToolSpec]
) -> AsyncGenerator[ModelResponse | None, None]:
    """The model's response, streamed as text deltas when the turn streams (None after each), recorded."""
    response: ModelResponse | None = None
    system, model_name = model_identity(model)
    started = time.perf_counter()
    with spans.model_call(agent.name, system, model_name) as span:
        if turn.stream:
            async with _closing(model.stream(messages, offered, agent.settings)) as items:
                async for item in items:
                    if isinstance(item, TextDelta):
                        await turn.emit(EventType.TEXT_DELTA, agent=agent.name, text=item.text)
                        yield None
                    else:
                        response = item
            if response is None:
                raise RuntimeError(f"the model of agent {agent.name!r} ended its stream without a response")
        else:
            response = await model.complete(messages, offered, agent.settings)
        usage = response.usage
        tokens = {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens} if usage else {}
        spans.usage(span, tokens.get("prompt_tokens"), tokens.get("completion_tokens"), response.cost_usd)
    await turn.emit(
        EventType.MODEL_CALL,
        agent=agent.name,
        system=system,
        model=model_name,
        cost_usd=response.cost_usd,
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
        **tokens,
    )
    yield response


async def _run_tool_calls(
    turn: Turn,
    tools: list[Tool],
    calls: list[ToolCall],
    targets: Targets,
    max_tool_iterations: int,
    *,
    concurrently: bool,
) -> Transfer | None:
    """Ordinary tools first, then transfers; the first transfer asked for is returned, to be carried out.

    The calls within ``max_tool_iterations`` run one after another, or all at once
    (``concurrently``); either way each sees the context variables as the response
    found them, their updates are merged in the order the model asked, and results go
    into the history in that order (once the transfer is decided, when there is one).
    Calls past the limit are answered without running.
    """
    source = turn.agent.name
    by_name = {t.name: t for t in tools}
    ordinary_first = sorted(range(len(calls)), key=lambda i: isinstance(by_name.get(calls[i].name), TransferTool))
    room = max(0, max_tool_iterations - turn.tool_calls)
    running = ordinary_first[:room]
    turn.tool_calls += len(running)
    for i in running:
        call = calls[i]
        await turn.emit(EventType.TOOL_CALL, agent=source, tool=call.name, call_id=call.id, arguments=call.arguments)
    context = copy.deepcopy(turn.session.context_variables)
    thunks = [functools.partial(_invoke, turn, by_name.get(calls[i].name), calls[i], context) for i in running]
    outcomes = dict(zip(running, await _gather(thunks, concurrently=concurrently), strict=True))
    if len(running) < len(calls):
        await turn.emit(EventType.LIMIT_REACHED, agent=source, limit="max_tool_iterations", value=max_tool_iterations)
    results = dict.fromkeys(ordinary_first[room:], TOOL_LIMIT_MESSAGE)
    requests: list[tuple[int, Handoff | SwarmMember]] = []
    for i in sorted(outcomes):
        results[i], request, updates = outcomes[i]
        turn.session.context_variables.update(updates)
        if request is not None:
            requests.append((i, request))

    async def write_results() -> None:
        for i, request in requests[1:]:
            await turn.emit(
                EventType.HANDOFF_REFUSED,
                source=source,
                target=request.target_agent_name if isinstance(request, Handoff) else request.name,
                cause="one_per_response",
                reason=request.reason if isinstance(request, Handoff) else None,
            )
            results[i] = _join(results[i], ONE_TRANSFER_MESSAGE)
        for i, call in enumerate(calls):
            await turn.tool_result(source, call.id, call.name, results[i])

    if not requests:
        await write_results()
        return None
    first, request = requests[0]
    target, handoff = await targets.asked_for(request)

    async def answer(text: str) -> None:
        results[first] = _join(results[first], text)
        await write_results()

    return Transfer(target, handoff, answer)


async def _invoke(turn: Turn, tool: Tool | None, call: ToolCall, context: dict[str, Any]) -> Outcome:
    """Run one tool on its own deep copy of ``context``; a tool that raises (bad arguments too) is an error result.

    The value becomes the result text; a Handoff, an agent, or a ToolResult naming one
    is a transfer request; a ToolResult's ``context_variables`` are the updates.
    """
    if tool is None:
        return f"Error: agent {turn.agent.name!r} has no tool named {call.name!r}.", None, {}
    try:
        with turn.recorder.active(), in_turn(turn.scope), spans.tool_call(call.name, call.id):
            value = await tool.invoke(dict(call.arguments), copy.deepcopy(context))
    except Exception as exc:
        return f"Error: {type(exc).__name__}: {exc}", None, {}
    if isinstance(value, ToolResult):
        request = value.agent if _is_transfer(value.agent) else None
        return _result_text(value.value), request, dict(value.context_variables or {})
    if _is_transfer(value):
        return "", value, {}
    return _result_text(value), None, {}


async def _gather(thunks: Sequence[Callable[[], Awaitable[Outcome]]], *, concurrently: bool) -> list[Outcome]:
    """Each thunk's outcome, in order: one after another, or all at once in a task group."""
    outcomes: list[Outcome | None] = [None] * len(thunks)

    async def run(index: int) -> None:
        outcomes[index] = await thunks[index]()

    if concurrently and len(thunks) > 1:
        async with anyio.create_task_group() as tasks:
            for index in range(len(thunks)):
                tasks.start_soon(run, index)
    else:
        for index in range(len(thunks)):
            await run(index)
    return [outcome for outcome in outcomes if outcome is not None]


async def _model_messages(agent: Agent, turn: Turn, history: HistoryPolicy) -> list[ChatMessage]:
    """The agent's instructions, then the history as its model may see it."""
    system = {"role": "system", "content": agent.get_instructions(turn.session.context_variables)}
    return [system, *(_for_model(m) for m in await shown_to(history, agent.name, turn.session))]


def _is_transfer(value: Any) -> bool:
    """A tool's value that asks for a transfer: a Handoff, or an agent (OpenAI swarm's way)."""
    return isinstance(value, Handoff | Agent | RemoteAgent)


def _transfer_to_forgotten(tool: Tool, agents: dict[str, SwarmMember]) -> bool:
    """A transfer tool whose target is no longer in the swarm (``Runner.forget``) is not offered."""
    return isinstance(tool, TransferTool) and agents.get(tool.target.name) is not tool.target


def _closing(items: AsyncIterator[Any]) -> AbstractAsyncContextManager[AsyncIterator[Any]]:
    """Close a model's stream in this task when we stop early (not whenever it is collected)."""
    return aclosing(items) if hasattr(items, "aclose") else nullcontext(items)  # type: ignore[type-var]


def _assistant_message(sender: str, content: str, calls: list[ToolCall]) -> ChatMessage:
    message = ModelResponse(content=content, tool_calls=calls).to_message()
    message["sender"] = sender
    return message


def _for_model(message: ChatMessage) -> ChatMessage:
    """OpenAI-shaped message: our ``sender`` becomes ``name`` (a valid identifier) on assistant turns."""
    clean = {k: message[k] for k in _MODEL_KEYS if k in message}
    if message.get("role") == "assistant" and message.get("sender"):
        clean["name"] = sanitize_agent_name(str(message["sender"]))[:_MODEL_NAME_CHARS]
    return clean


def _result_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if hasattr(value, "model_dump"):
        return orjson.dumps(value.model_dump(mode="json")).decode()
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def _join(first: str, second: str) -> str:
    return f"{first}\n{second}" if first else second
