"""`make demo`: a support desk of agent services coordinated by a gateway, offline, on loopback.

Starts billing, tech support, an editor and two researchers as separate agent services,
and a gateway (SQLite stores) whose local triage agent fronts them. Then a scripted
customer conversation and a few direct agent-tool calls show, as they happen:

1. a local-to-remote handoff (triage -> billing), 2. a remote-to-remote handoff
(billing -> tech), 3-5. agent-as-tool in sync, streaming and conversational mode,
6. a budget cutoff and 7. an idle timeout, each with its tasks/cancel acknowledged.

Every process is stopped at the end, also on Ctrl-C or ``kill`` (and, were the demo killed
with SIGKILL, each service stops with it); with ``--keep`` (``make demo ARGS=--keep``) they
stay up until then, and the last line is the console's URL for the conversation's last run.
The exit code is 1 if a step failed.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx
import orjson

from agent_server.http.loopback import free_port
from examples._processes import ServiceGroup, service_group
from gateway.cli.chat import ChatView

ROOT = Path(__file__).resolve().parent.parent
SESSION = "customer-42"
AGENTS = ("billing", "tech", "editor", "researcher", "slow_researcher")

CONFIG = """\
[gateway]
host = "127.0.0.1"
port = {port}
name = "support-desk"
data_dir = "{data_dir}"

[stores]
sessions = "sqlite"
events = "sqlite"

[swarm]
starting_agent = "triage"

[[agents]]
name = "triage"
instructions = "You are the front desk of ACME support. Route customers to billing or tech support."
model = "offline"
handoffs = ["billing", "tech"]

[[agents]]
name = "billing"
url = "{billing}"

[[agents]]
name = "tech"
url = "{tech}"

[[tools]]
name = "kb_lookup"
agent = "{tech}"
mode = "sync"

[[tools]]
name = "research"
agent = "{researcher}"
mode = "streaming"

[[tools]]
name = "research_capped"
agent = "{researcher}"
mode = "streaming"
max_cost_usd = 0.004

[[tools]]
name = "research_slow"
agent = "{slow_researcher}"
mode = "streaming"
idle_timeout_secs = 0.5

[[tools]]
name = "polish"
agent = "{editor}"
mode = "conversational"
max_turns = 4
"""


@dataclass
class Step:
    title: str
    passed: bool = False
    detail: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)


class Demo:
    """The scripted scenario against a running gateway; each step records its events and verdict."""

    def __init__(self, gateway_url: str, out: TextIO) -> None:
        self.url = gateway_url
        self.out = out
        self.steps: list[Step] = []
        self.last_turn: str | None = None
        """The run of the conversation's last turn (the console's page printed at the end)."""
        self.client = httpx.Client(base_url=gateway_url, timeout=httpx.Timeout(30.0, connect=5.0))

    def run(self) -> list[Step]:
        with self.client:
            self._say(
                "1. local-to-remote handoff",
                "Hi, I was charged twice for order ORD-1234, please refund it.",
                lambda e: _handoff(e, "triage", "billing") and _active(e) == "billing",
            )
            self._say(
                "2. remote-to-remote handoff",
                "Thanks. Also the app crashes with error E42 when I open settings.",
                lambda e: _handoff(e, "billing", "tech") and _active(e) == "tech" and "KB-042" in _content(e),
            )
            self._call("3. agent-as-tool, sync", "kb_lookup", "error E17", lambda e: "KB-017" in _ending(e, "text"))
            self._call(
                "4. agent-as-tool, streaming",
                "research",
                "refund fraud patterns",
                lambda e: _ending(e)["type"] == "agent_tool_completed" and _count(e, "artifact") == 12,
            )
            self._call(
                "5. agent-as-tool, conversational",
                "polish",
                "sorry for the trouble, we will fix it pls wait",
                lambda e: _ending(e).get("state") == "completed" and _ending(e, "text").count("Draft") == 2,
            )
            self._call(
                "6. budget cutoff",
                "research_capped",
                "chargeback rules",
                lambda e: _terminated(e, "budget_exceeded"),
            )
            self._call("7. idle timeout", "research_slow", "long-term trends", lambda e: _terminated(e, "idle_timeout"))
        return self.steps

    def _say(self, title: str, text: str, check: Callable[[list[dict[str, Any]]], bool]) -> None:
        step = self._begin(title)
        self._print(f"customer> {text}")
        view = ChatView(self.out)
        self._follow(step, f"/sessions/{SESSION}/messages", {"message": text}, view.event)
        view.end()
        if step.events:
            self.last_turn = step.events[0]["run_id"]
        self._finish(step, check)

    def _call(self, title: str, tool: str, text: str, check: Callable[[list[dict[str, Any]]], bool]) -> None:
        step = self._begin(title)
        self._print(f"calling tool {tool!r} with {text!r}")
        self._follow(step, f"/tools/{tool}/call", {"input": text, "stream": True}, self._show_tool_event)
        self._finish(step, check)

    def _follow(self, step: Step, path: str, body: dict[str, Any], show: Callable[[dict[str, Any]], None]) -> None:
        """POST ``body`` and read the NDJSON events of the run it starts, keeping and showing each as it arrives."""
        with self.client.stream("POST", path, json=body) as response:
            _raise_for(response)
            for line in response.iter_lines():
                if line:
                    event = orjson.loads(line)
                    step.events.append(event)
                    show(event)

    def _show_tool_event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "agent_tool_invoked":
            self._print(f"  invoked {event['agent']} ({event['mode']})")
        elif kind == "agent_tool_progress":
            text = _one_line(event.get("text") or event.get("state") or "", 70)
            label = f"turn {event['turn']}" if event.get("kind") == "turn" else f"chunk {event['chunk_index']}"
            self._print(f"  {label} ({event.get('kind')}): ${event['accumulated_cost_usd']:.4f} so far  {text}")
        elif kind == "agent_tool_completed":
            self._print(f"  completed: {_one_line(event.get('text') or '', 150)}")
        elif kind == "agent_tool_terminated":
            acknowledged = "acknowledged" if event.get("cancel_acknowledged") else "NOT acknowledged"
            self._print(f"  terminated: {event['reason']}; tasks/cancel sent, {acknowledged}")
        elif kind == "agent_tool_error":
            self._print(f"  error: {event.get('message')}")

    def _begin(self, title: str) -> Step:
        step = Step(title)
        self.steps.append(step)
        self._print(f"\n== {title} ==")
        return step

    def _finish(self, step: Step, check: Callable[[list[dict[str, Any]]], bool]) -> None:
        try:
            step.passed = bool(check(step.events))
        except Exception as exc:  # any event shape the check did not expect is a failed step, not a traceback
            step.detail = f"unexpected events: {exc!r}"
        self._print(f"  -> {'ok' if step.passed else 'FAILED'} {step.detail}".rstrip())

    def _print(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()


def _one_line(text: str, width: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def _raise_for(response: httpx.Response) -> None:
    if response.status_code != 200:
        response.read()
        raise RuntimeError(f"{response.request.url} answered {response.status_code}: {response.text}")


def _handoff(events: list[dict[str, Any]], source: str, target: str) -> bool:
    return any(e["type"] == "handoff" and e["source"] == source and e["target"] == target for e in events)


def _active(events: list[dict[str, Any]]) -> str:
    return str(_last(events, "run_completed")["active_agent_name"])


def _content(events: list[dict[str, Any]]) -> str:
    return str(_last(events, "run_completed")["content"])


def _ending(events: list[dict[str, Any]], key: str | None = None) -> Any:
    ending = events[-1]
    return str(ending.get(key) or "") if key else ending


def _count(events: list[dict[str, Any]], kind: str) -> int:
    """Progress events of one kind (artifact, status, turn...)."""
    return sum(1 for e in events if e["type"] == "agent_tool_progress" and e.get("kind") == kind)


def _terminated(events: list[dict[str, Any]], reason: str) -> bool:
    ending = _ending(events)
    return (
        ending["type"] == "agent_tool_terminated"
        and ending["reason"] == reason
        and ending["cancel_acknowledged"] is True
    )


def _last(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = next((e for e in reversed(events) if e.get("type") == kind), None)
    if found is None:
        seen = [e.get("type") for e in events]
        raise LookupError(f"no {kind} event (events: {', '.join(map(str, seen)) or 'none'})")
    return found


def start_services(group: ServiceGroup, data_dir: Path) -> str:
    """Every agent service and the gateway, ready; returns the gateway's URL."""
    urls = {}
    for name in AGENTS:
        port = free_port()
        urls[name] = f"http://127.0.0.1:{port}"
        group.start(
            name, ["serve", f"examples.demo_agents:{name}", "--port", str(port)], urls[name], "/.well-known/agent.json"
        )
    group.wait_ready()
    port = free_port()
    config = data_dir / "gateway.toml"
    config.write_text(CONFIG.format(port=port, data_dir=data_dir, **urls))
    gateway = group.start("gateway", ["gateway", "--config", str(config)], f"http://127.0.0.1:{port}", "/health")
    group.wait_ready()
    return gateway.url


def run_demo(out: TextIO = sys.stdout, keep: bool = False) -> list[Step]:
    """Start everything, run the steps, print the verdict and the console's URL; ``keep``: stay up until Ctrl-C."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="switchboard-demo-") as tmp, service_group(ROOT, Path(tmp)) as group:
        out.write("starting 5 agent services and the gateway on 127.0.0.1 ...\n")
        url = start_services(group, Path(tmp))
        for service in group.services:
            out.write(f"  {service.name:<16} {service.url}  (pid {service.process.pid})\n")
        out.write(f"ready in {time.monotonic() - started:.1f} s; session {SESSION!r}; logs in {tmp}\n")
        out.flush()
        demo = Demo(url, out)
        try:
            steps = demo.run()
        except Exception:
            for service in group.services:
                out.write(f"--- {service.name} log ---\n{group.log_of(service).read_text()[-2000:]}\n")
            raise
        failed = [s.title for s in steps if not s.passed]
        out.write(f"\n{len(steps) - len(failed)}/{len(steps)} steps ok in {time.monotonic() - started:.1f} s\n")
        if failed:
            out.write("failed: " + ", ".join(failed) + "\n")
        page = f"runs/{demo.last_turn}" if demo.last_turn else f"sessions/{SESSION}"
        if keep:
            out.write(f"console: {url}/ui/#/{page}\n")
            out.write("the services stay up (--keep); Ctrl-C stops them all\n")
        else:  # the gateway stops with the demo: a link to it would be dead
            out.write("every service is stopped; `make demo ARGS=--keep` keeps them up and prints the console's link\n")
        out.flush()
        while keep:
            time.sleep(3600)
        return steps


def _stopped(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make demo", description="The support desk demo, on loopback.")
    parser.add_argument("--keep", action="store_true", help="keep every service up until Ctrl-C (open the console)")
    args = parser.parse_args(argv)
    for stopping in (signal.SIGTERM, signal.SIGHUP):  # `kill`, a closed terminal: stop like Ctrl-C, cleaning up
        signal.signal(stopping, _stopped)
    try:
        steps = run_demo(keep=args.keep)
    except KeyboardInterrupt:
        print("\ninterrupted; every service was stopped.")
        return 130
    return 1 if any(not s.passed for s in steps) else 0


if __name__ == "__main__":
    sys.exit(main())
