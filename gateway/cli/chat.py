"""``switchboard chat``: talk to a gateway service's swarm, one line per message, seeing who answers.

Each line read from stdin (a terminal or a pipe) is posted to the session; the run's
events are shown as they arrive: ``billing> ...`` for the agent speaking, and a line
like ``[triage -> billing] refund request`` for every handoff, and each agent-tool call
with its chunks and cost against its budget (rewritten in place on a terminal, one line
when it ends otherwise). Lines starting with ``/`` are commands, never sent: ``/help``,
``/reset`` (the starting agent takes the next message), ``/agent NAME`` (NAME takes it),
``/agent`` (list the agents). ``/quit``, end of input or Ctrl-C at the prompt leaves. A
message the gateway refuses is reported and the chat goes on (the exit code is then 1);
Ctrl-C during an answer stops showing it and returns to the prompt, while the run itself
goes on in the gateway.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

import orjson

from gateway.cli.client import (
    CommandFailed,
    GatewayRefused,
    add_gateway_options,
    gateway_address,
    gateway_client,
    refused,
    request_json,
    unreachable,
)

if TYPE_CHECKING:
    import httpx

    from gateway.cli.progress import CallLine

QUIT_COMMANDS = frozenset({"/quit", "/exit"})
HELP = """\
commands (not sent to the agents):
  /help          this list
  /reset         the starting agent takes the next message (the conversation so far stays)
  /agent NAME    NAME takes the next message; /agent alone lists the agents
  /quit, /exit   leave (so does end of input)"""


def add_chat(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "chat",
        help="chat with a gateway service's agents (reads stdin line by line)",
        description="Send each line you type to a gateway session; show the answer, the agent giving it, and handoffs.",
    )
    add_gateway_options(parser)
    parser.add_argument("--session", default=None, metavar="ID", help="session to continue (default: a new one)")
    parser.set_defaults(run=run_chat)


def run_chat(args: argparse.Namespace) -> int:
    address = gateway_address(args)
    url = address.url
    session = args.session or "chat-" + uuid.uuid4().hex[:12]
    interactive = sys.stdin.isatty()
    print(f"session {session} on {url} (/quit to leave)", file=sys.stderr)
    refusals = 0
    try:
        with gateway_client(address) as client:
            while (text := _next_message(interactive)) is not None:
                try:
                    if text.startswith("/"):
                        _command(client, url, session, text)
                    else:
                        _turn(client, url, session, text, ChatView(sys.stdout, live=sys.stdout.isatty()))
                except GatewayRefused as exc:
                    refusals += 1
                    print(f"switchboard chat: {exc}", file=sys.stderr)
                except KeyboardInterrupt:
                    print("\n[stopped showing this answer; the run goes on in the gateway]", file=sys.stderr)
    except CommandFailed as exc:
        print(f"switchboard chat: {exc}", file=sys.stderr)
        return 1
    return 1 if refusals else 0


def _next_message(interactive: bool) -> str | None:
    """The next non-empty line, or None to leave (end of input, /quit, Ctrl-C at the prompt)."""
    while True:
        if interactive:
            sys.stdout.write("you> ")
            sys.stdout.flush()
        try:
            line = sys.stdin.readline()
        except KeyboardInterrupt:
            return None
        text = line.strip()
        if not line or text in QUIT_COMMANDS:
            return None
        if text:
            return text


def _command(client: httpx.Client, url: str, session: str, text: str) -> None:
    """A line starting with ``/``: done here, never sent as a message."""
    name, _, argument = text.partition(" ")
    argument = argument.strip()
    if name == "/help":
        print(HELP)
    elif name == "/reset":
        starting = str(request_json(client, url, "GET", "/agents")["starting_agent"])
        _hand_to(client, url, session, starting)
    elif name == "/agent" and argument:
        _hand_to(client, url, session, argument)
    elif name == "/agent":
        listing = request_json(client, url, "GET", "/agents")
        for agent in listing["agents"]:
            mark = " (starting)" if agent["starting"] else ""
            print(f"  {agent['name']}{mark}: {agent['kind']}, {agent.get('description') or ''}".rstrip(", "))
    else:
        print(f"[unknown command {name}; /help lists them]")


def _hand_to(client: httpx.Client, url: str, session: str, agent: str) -> None:
    path = f"/sessions/{quote(session, safe='')}/agent"
    answer = request_json(client, url, "PUT", path, {"agent": agent})
    print(f"[{answer['active_agent']} takes the next message]")


def _turn(client: httpx.Client, url: str, session: str, text: str, view: ChatView) -> None:
    import httpx

    try:
        with client.stream("POST", f"/sessions/{quote(session, safe='')}/messages", json={"message": text}) as response:
            if response.status_code != 200:
                raise refused(response)
            for line in response.iter_lines():
                if line:
                    view.event(orjson.loads(line))
    except httpx.TransportError as exc:
        raise unreachable(url, exc) from None
    view.end()


class ChatView:
    """Turns a run's events into what a person reads: who speaks, what they say, who hands over to whom.

    ``live`` (a terminal): an agent-tool call's line is rewritten in place as its chunks
    come; otherwise it is printed once, when the call ends.
    """

    def __init__(self, out: TextIO, live: bool = False) -> None:
        self.out = out
        self.live = live
        self.speaker: str | None = None
        self._streamed = False
        self._calls: dict[str, CallLine] = {}
        self._drawn = False

    def event(self, event: dict[str, Any]) -> None:
        from gateway.recording.events import EventType

        kind = str(event.get("type"))
        agent = str(event.get("agent") or "")
        if kind.startswith("agent_tool_"):
            self._call(kind, event)
        elif kind == EventType.TEXT_DELTA.value:
            self._speak(agent, str(event.get("text") or ""))
            self._streamed = True
        elif kind == EventType.MESSAGE.value:
            if not self._streamed and event.get("content"):
                self._speak(agent, str(event["content"]))
            self._streamed = False
        elif kind == EventType.HANDOFF.value:
            reason = f" {event['reason']}" if event.get("reason") else ""
            self._note(f"[{event.get('source')} -> {event.get('target')}]{reason}")
        elif kind == EventType.TOOL_CALL.value and not str(event.get("tool", "")).startswith("transfer_to_"):
            self._note(f"[{agent} calls {event.get('tool')}]")
        elif kind in (EventType.HANDOFF_REFUSED.value, EventType.CYCLE_DETECTED.value, EventType.LIMIT_REACHED.value):
            detail = event.get("cause") or event.get("limit") or " -> ".join(event.get("path") or [])
            self._note(f"[{kind.replace('_', ' ')}: {detail}]")
        elif kind == EventType.RUN_FAILED.value and event.get("error_type") == "AgentTaskFailed":
            # A remote agent's own error is its operator's to read, not the person chatting's.
            self._note(f"[the run failed: {agent}'s task failed; `switchboard events {event.get('run_id')}` says why]")
        elif kind == EventType.RUN_FAILED.value:
            self._note(f"[the run failed: {event.get('error')}]")

    def _call(self, kind: str, event: dict[str, Any]) -> None:
        """A tool call's progress; a remote member's own call is its speech, shown as such."""
        from gateway.cli.progress import CallLine

        call_id = str(event.get("call_id"))
        if event.get("member"):
            return
        if kind == "agent_tool_invoked":
            self._calls[call_id] = CallLine(event)
            return
        call = self._calls.get(call_id)
        if call is None:
            return
        call.update(event)
        if call.ending is not None:
            self._clear()
            self._note(f"[{call.line()}]")
            del self._calls[call_id]
        elif self.live:
            self._clear()
            if self.speaker is not None:
                self.out.write("\n")
                self.speaker = None
            self.out.write(f"[{call.line()}]")
            self.out.flush()
            self._drawn = True

    def _clear(self) -> None:
        if self._drawn:
            self.out.write("\r\x1b[2K")
            self._drawn = False

    def end(self) -> None:
        self._clear()
        if self.speaker is not None:
            self.out.write("\n")
        self.out.flush()
        self.speaker = None

    def _speak(self, agent: str, text: str) -> None:
        self._clear()
        if agent != self.speaker:
            if self.speaker is not None:
                self.out.write("\n")
            self.out.write(f"{agent}> ")
            self.speaker = agent
        self.out.write(text)
        self.out.flush()

    def _note(self, text: str) -> None:
        self._clear()
        if self.speaker is not None:
            self.out.write("\n")
            self.speaker = None
        self.out.write(text + "\n")
        self.out.flush()
