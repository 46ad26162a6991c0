"""``switchboard chat``: talk to a gateway service's swarm, one line per message, seeing who answers.

Each line read from stdin (a terminal or a pipe) is posted to the session; the run's
events are shown as they arrive: ``billing> ...`` for the agent speaking, and a line
like ``[triage -> billing] refund request`` for every handoff. ``/quit``, end of input or
Ctrl-C at the prompt leaves. A message the gateway refuses is reported and the chat goes
on (the exit code is then 1); Ctrl-C during an answer stops showing it and returns to the
prompt, while the run itself goes on in the gateway.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

import orjson

from .client import (
    GATEWAY_URL_HELP,
    CommandFailed,
    GatewayRefused,
    default_gateway_url,
    gateway_client,
    refused,
    unreachable,
)

if TYPE_CHECKING:
    import httpx

QUIT_COMMANDS = frozenset({"/quit", "/exit"})


def add_chat(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "chat",
        help="chat with a gateway service's agents (reads stdin line by line)",
        description="Send each line you type to a gateway session; show the answer, the agent giving it, and handoffs.",
    )
    parser.add_argument("--gateway", default=None, metavar="URL", help=GATEWAY_URL_HELP)
    parser.add_argument("--session", default=None, metavar="ID", help="session to continue (default: a new one)")
    parser.set_defaults(run=run_chat)


def run_chat(args: argparse.Namespace) -> int:
    url = args.gateway or default_gateway_url()
    session = args.session or "chat-" + uuid.uuid4().hex[:12]
    interactive = sys.stdin.isatty()
    print(f"session {session} on {url} (/quit to leave)", file=sys.stderr)
    refusals = 0
    try:
        with gateway_client(url) as client:
            while (text := _next_message(interactive)) is not None:
                try:
                    _turn(client, url, session, text, ChatView(sys.stdout))
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
    """Turns a run's events into what a person reads: who speaks, what they say, who hands over to whom."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.speaker: str | None = None
        self._streamed = False

    def event(self, event: dict[str, Any]) -> None:
        from gateway.events import EventType

        kind = event.get("type")
        agent = str(event.get("agent") or "")
        if kind == EventType.TEXT_DELTA.value:
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
        elif kind == EventType.RUN_FAILED.value:
            self._note(f"[the run failed: {event.get('error')}]")

    def end(self) -> None:
        if self.speaker is not None:
            self.out.write("\n")
        self.out.flush()
        self.speaker = None

    def _speak(self, agent: str, text: str) -> None:
        if agent != self.speaker:
            if self.speaker is not None:
                self.out.write("\n")
            self.out.write(f"{agent}> ")
            self.speaker = agent
        self.out.write(text)
        self.out.flush()

    def _note(self, text: str) -> None:
        if self.speaker is not None:
            self.out.write("\n")
            self.speaker = None
        self.out.write(text + "\n")
        self.out.flush()
