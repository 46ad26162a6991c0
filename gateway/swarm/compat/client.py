"""OpenAI swarm's client, ``Swarm().run(agent, messages, ...)``, on Switchboard's Runner.

Swarm's client keeps nothing between calls: each gets the whole conversation and returns
what the run added. Here each call is one Runner turn in a session of its own, kept in
memory for the call: the messages before the last are the session's history, the last
(the user's) is the turn's message, and the ``Response`` carries the messages the turn
added, the agent holding the conversation and the context variables as the turn left
them. So swarm's loops (``messages.extend(response.messages)``, ``agent = response.agent``)
work unchanged, and each step is a Switchboard event (``debug=True`` prints them).
"""

from __future__ import annotations

import copy
import math
import uuid
from collections.abc import Iterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio import create_memory_object_stream
from anyio.from_thread import start_blocking_portal
from anyio.streams.memory import MemoryObjectSendStream

from gateway.models.base import ChatMessage, ChatModel
from gateway.models.providers import Providers
from gateway.swarm.compat.chunks import Chunk, ChunkWriter
from gateway.swarm.member import SwarmMember
from gateway.swarm.runner import Runner
from gateway.swarm.sessions import MemorySessionStore, Session
from gateway.swarm.turn import RunOptions
from gateway.tools import ToolResult

Result = ToolResult
"""swarm's ``Result(value=, agent=, context_variables=)``: the same fields, the same meaning."""


@dataclass
class Response:
    """What a run returns, by swarm's names: the messages it added, the active agent, the context variables."""

    messages: list[ChatMessage] = field(default_factory=list)
    agent: SwarmMember | None = None
    context_variables: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Call:
    """One ``run``'s arguments, checked: the history before the user's message, and that message."""

    agent: SwarmMember
    history: list[ChatMessage]
    user_message: str
    context_variables: dict[str, Any]
    options: RunOptions


class Swarm:
    """swarm's client. ``client``: a ChatModel every agent's calls go to, as swarm's OpenAI client is.

    Without one, each agent's ``model`` is used (a name resolves through ``providers``,
    by default the environment's: ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``; no model is
    the offline one). ``model_override`` of a run wins over both.
    """

    def __init__(self, client: ChatModel | None = None, *, providers: Providers | None = None) -> None:
        if client is not None and not isinstance(client, ChatModel):
            raise TypeError(
                f"Swarm(client=...) takes a Switchboard ChatModel, not {type(client).__name__}: an OpenAI "
                "endpoint is set with OPENAI_BASE_URL and OPENAI_API_KEY (or Providers, passed as providers=)"
            )
        self.client = client
        self.providers = providers or Providers()

    def run(
        self,
        agent: SwarmMember,
        messages: Sequence[ChatMessage],
        context_variables: dict[str, Any] | None = None,
        model_override: ChatModel | str | None = None,
        stream: bool = False,
        debug: bool = False,
        max_turns: float = math.inf,
        execute_tools: bool = True,
    ) -> Response | Iterator[Chunk]:
        """One turn of ``agent`` on ``messages`` (the last one the user's); blocking, as swarm's is.

        ``stream=True`` returns swarm's chunks as the turn records them, then ``{"response": Response}``.
        ``max_turns`` counts agent steps (model calls or remote tasks), not messages.
        """
        call = self._call(agent, messages, context_variables, model_override, debug, max_turns, execute_tools)
        if stream:
            return self._streamed(call)
        return anyio.run(self._run, call)

    def _call(
        self,
        agent: SwarmMember,
        messages: Sequence[ChatMessage],
        context_variables: dict[str, Any] | None,
        model_override: ChatModel | str | None,
        debug: bool,
        max_turns: float,
        execute_tools: bool,
    ) -> _Call:
        history = [_ours(m) for m in copy.deepcopy(list(messages))]
        if not history or history[-1].get("role") != "user":
            raise ValueError(
                "a run needs the user's message last in messages (a turn starts from what the user said); "
                "append {'role': 'user', 'content': ...} before calling run"
            )
        last = history.pop()
        turns = None if math.isinf(max_turns) else int(max_turns)
        options = RunOptions(model_override or self.client, turns, execute_tools, debug)
        return _Call(agent, history, str(last.get("content") or ""), copy.deepcopy(context_variables or {}), options)

    async def _run(self, call: _Call) -> Response:
        """The turn, then the models' HTTP clients closed: the next call runs in another event loop."""
        try:
            return await self._response(call)
        finally:
            await self.providers.aclose()

    async def _response(self, call: _Call) -> Response:
        runner, store, session_id = await self._prepared(call)
        await runner.run_async(session_id, call.user_message, call.context_variables, options=call.options)
        return await _read_back(runner, store, session_id, call)

    async def _chunks(self, call: _Call, send: MemoryObjectSendStream[Chunk]) -> None:
        """The turn's chunks into ``send``, one at a time as the caller takes them, then the Response's."""
        try:
            async with send:
                runner, store, session_id = await self._prepared(call)
                writer = ChunkWriter()
                turn = runner.run_stream(session_id, call.user_message, call.context_variables, options=call.options)
                async with aclosing(turn) as events:
                    async for event in events:
                        for chunk in writer.chunks(event):
                            await send.send(chunk)
                await send.send({"response": await _read_back(runner, store, session_id, call)})
        finally:
            await self.providers.aclose()

    def _streamed(self, call: _Call) -> Iterator[Chunk]:
        """The chunks of an async turn to a caller that iterates without an event loop (swarm's is a plain generator).

        The turn runs as one task in a portal's event loop (its session lock is that task's),
        handing each chunk over when the caller asks for the next; leaving early cancels the
        task, which ends the turn as a failed run.
        """
        with start_blocking_portal() as portal:
            send, receive = create_memory_object_stream[Chunk]()
            turn = portal.start_task_soon(self._chunks, call, send)
            try:
                while True:
                    try:
                        chunk = portal.call(receive.receive)
                    except anyio.EndOfStream:
                        break
                    yield chunk
                turn.result()
            finally:
                turn.cancel()
                receive.close()

    async def _prepared(self, call: _Call) -> tuple[Runner, MemorySessionStore, str]:
        """A Runner starting at the call's agent, over a session in memory that holds the call's history."""
        store = MemorySessionStore()
        session_id = f"swarm-{uuid.uuid4().hex}"
        await store.save(Session(session_id, history=call.history))
        return Runner(call.agent, store, providers=self.providers), store, session_id


async def _read_back(runner: Runner, store: MemorySessionStore, session_id: str, call: _Call) -> Response:
    """The Response from the session as the turn saved it: what came after the user's message, who holds it."""
    session = await store.load(session_id)
    added = session.history[len(call.history) + 1 :]
    agent = runner.agents.get(session.active_agent or "", call.agent)
    return Response([_swarm_shaped(m) for m in added], agent, dict(session.context_variables))


def _ours(message: ChatMessage) -> ChatMessage:
    """A message as the session keeps it: swarm's ``tool_calls: None`` on an answer without calls left out."""
    if "tool_calls" in message and not message["tool_calls"]:
        del message["tool_calls"]
    return message


def _swarm_shaped(message: ChatMessage) -> ChatMessage:
    """A message with the keys swarm's code reads on it: an assistant's ``content`` and ``tool_calls`` (None when
    absent), a tool result's ``tool_name``."""
    shaped = dict(message)
    if shaped.get("role") == "assistant":
        shaped.setdefault("content", None)
        shaped["tool_calls"] = shaped.get("tool_calls") or None
    elif shaped.get("role") == "tool" and "name" in shaped:
        shaped.setdefault("tool_name", shaped["name"])
    return shaped
