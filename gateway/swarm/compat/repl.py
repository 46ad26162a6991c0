"""swarm's ``run_demo_loop``: talk to a swarm in a terminal, as swarm's examples end.

A line read is the user's message; the answer is printed agent by agent (the agent's
name, its text, the tools it called), streamed as it comes with ``stream=True``. The loop
keeps the conversation, the agent holding it and the context variables from one line to
the next; end of input (Ctrl-D) or Ctrl-C leaves it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from gateway.models.base import ChatMessage
from gateway.swarm.compat.chunks import Chunk
from gateway.swarm.compat.client import Response, Swarm
from gateway.swarm.member import SwarmMember

_PROMPT = "\033[90mUser\033[0m: "
_AGENT = "\033[94m{}\033[0m"
_TOOL = "\033[95m{}\033[0m"


def run_demo_loop(
    starting_agent: SwarmMember,
    context_variables: dict[str, Any] | None = None,
    stream: bool = False,
    debug: bool = False,
) -> None:
    """Read a line, run a turn, print it; until the input ends."""
    client = Swarm()
    print("Starting Swarm CLI on Switchboard (Ctrl-D to leave)")
    messages: list[ChatMessage] = []
    agent = starting_agent
    variables = dict(context_variables or {})
    while True:
        try:
            line = input(_PROMPT)
        except (EOFError, KeyboardInterrupt):
            print()
            return
        messages.append({"role": "user", "content": line})
        result = client.run(agent, messages, variables, stream=stream, debug=debug)
        if isinstance(result, Response):
            response = result
            pretty_print_messages(response.messages)
        else:
            response = process_and_print_streaming_response(result)
        messages.extend(response.messages)
        agent = response.agent or agent
        variables = response.context_variables


def pretty_print_messages(messages: Iterable[ChatMessage]) -> None:
    """Each assistant message: its agent's name, then its text, then one line per tool it called."""
    for message in messages:
        if message.get("role") != "assistant":
            continue
        print(_AGENT.format(message.get("sender", "")) + ":", end=" ")
        if message.get("content"):
            print(message["content"])
        calls = message.get("tool_calls") or []
        if len(calls) > 1:
            print()
        for call in calls:
            print(_call_line(call["function"]["name"], call["function"].get("arguments") or "{}"))


def process_and_print_streaming_response(chunks: Iterable[Chunk]) -> Response:
    """Print a streamed turn as it comes; return the ``Response`` its last chunk carries."""
    sender = ""
    printed = False
    for chunk in chunks:
        if "response" in chunk:
            return chunk["response"]  # type: ignore[no-any-return]
        sender = chunk.get("sender") or sender
        if chunk.get("content"):
            if not printed:
                print(_AGENT.format(sender) + ":", end=" ", flush=True)
                printed = True
            print(chunk["content"], end="", flush=True)
        for call in chunk.get("tool_calls") or []:
            print(f"{_AGENT.format(sender)}: {_call_line(call['function']['name'], '')}")
        if chunk.get("delim") == "end" and printed:
            print()
            printed = False
    raise RuntimeError("the stream ended without its response")


def _call_line(name: str, arguments: str) -> str:
    """``name(key=value, ...)`` of a tool call, its arguments as the model gave them (JSON)."""
    try:
        parsed = orjson.loads(arguments) if arguments else {}
    except orjson.JSONDecodeError:
        parsed = arguments
    if isinstance(parsed, dict):
        shown = ", ".join(f"{key}={orjson.dumps(value).decode()}" for key, value in parsed.items())
    else:
        shown = str(parsed)
    return f"{_TOOL.format(name)}({shown})"
