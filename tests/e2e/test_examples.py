"""Every runnable example, run as a user would (``python -m examples.NAME``): exit code 0 and what it prints.

The echo and researcher agents are checked in-process in test_agent_server_manager.py;
the swarm examples' internals in test_swarm_support.py, test_swarm_airline.py and
test_swarm_remote.py. Here each ``__main__`` runs in its own process, offline, on loopback.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 120

EXPECTED: dict[str, list[str | re.Pattern[str]]] = {
    "support_swarm": [
        "  [Billing] via Billing: Done: order id: ORD-1234; refunded usd: 120.0",
        "  [Tech Support] via Triage -> Tech Support: Done: KB-101",
        "  [Triage] via Triage: Done: ORD-1001 is in transit",
    ],
    "airline": [
        "  [Flight Cancel Agent] via Flight Modification Agent -> Flight Cancel Agent: Done: Booking ABC123 cancelled",
        "  [Lost Baggage Agent] via Triage Agent -> Lost Baggage Agent: Done: Baggage search opened",
        "  [Flight Change Agent] via Triage Agent -> Flight Modification Agent -> Flight Change Agent: Done: Changed",
        "flight context now: Flight 1919 from LGA to LAX, moved to:",
    ],
    "remote_swarm": [
        "[-> billing] Billing here: the duplicate charge is refunded",
        "That sounds technical; passing you to tech. \n  [-> tech] Tech here: update to version 4.2",
        "Let me find you a person. \n  [-> escalation] A human agent will call you today about session remote-demo.",
        "(holding the conversation: escalation)",
    ],
    "agent_tools": [
        "1. sync: intake <- 'Hi, my parcel arrived broken.'\n   state input-required: Hello! What is your name?",
        "    chunk 1: +$0.0005, total $0.0005  [1/6] background on quantum batteries.",
        "    chunk 6: +$0.0005, total $0.0030  [6/6] sources on quantum batteries.",
        "   completed: 7 progress events, $0.0030",
        "   turn 1: Hello! What is your name?",
        "   turn 2: Thanks, Ada. Which order is this about",
        "   turn 3: Ticket opened for Ada about ORD-1234",
        "   state completed after 3 turns",
        "    chunk 2: +$0.0005, total $0.0010  [2/6] prior work on solid-state batteries.",
        "    terminated: budget_exceeded (cost $0.001500 exceeds the budget of $0.001200); "
        "cancel sent: True, acknowledged: True",
        "   the call failed with BudgetExceeded; 2 notes kept from before the cutoff",
        # after at least the 0.3 s idle timeout; how much longer depends on the machine's load
        re.compile(
            r"terminated: idle_timeout \(.* for 0\.3 s\); cancel sent: True, acknowledged: True, "
            r"after (0\.[3-9]|[1-9]\d*\.\d)\d s"
        ),
        "   the call failed with AgentToolTimeout",
        "tool_call > agent_tool_invoked > agent_tool_progress x7 > agent_tool_completed > tool_result",
        "   [desk] Done: [1/6] background on Please research graphene batteries.",
        "all steps behaved as expected",
    ],
    "mcp_tool": [
        "examples/mcp_weather_server.py#forecast",
        "   completed: Lisbon, next 3 days: day 1:",
        "   progress 1/4: Oslo day 1:",
        "   progress 4/4: Oslo day 4:",
        "   completed: Oslo, next 4 days: day 1:",
        "all steps behaved as expected",
    ],
    "gateway_of_gateways": [
        "registered 'billing-desk' by URL; its card lists skills ['refunds']",
        "  [triage -> billing-desk]",
        "  billing-desk> Done: refund of the duplicate charge on ORD-77 issued.",
        "tool ask_billing_desk -> completed: Done: refund of the duplicate charge on ORD-88 issued.",
        "all steps behaved as expected",
    ],
}


def run_example(name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", f"examples.{name}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


@pytest.mark.parametrize("name", list(EXPECTED))
def test_the_example_runs_and_prints_what_it_shows(name: str) -> None:
    done = run_example(name)
    report = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, report
    position = 0
    for expected in EXPECTED[name]:
        pattern = expected if isinstance(expected, re.Pattern) else re.compile(re.escape(expected))
        found = pattern.search(done.stdout, position)
        assert found is not None, f"{expected!r} missing (or out of order) in the output of examples.{name}\n{report}"
        position = found.end()


def mentions(text: str, name: str) -> bool:
    return bool(re.search(rf"examples[./]{name}\b|from examples import [\w, ]*\b{name}\b|\b{name}\.py\b", text))


def test_every_example_module_is_covered_by_some_test() -> None:
    """Covered: in EXPECTED, named by a test (``examples.NAME``, ``examples/NAME.py``), or used by a covered example."""
    tests = "\n".join(path.read_text() for path in Path(__file__).parents[1].rglob("test_*.py"))
    sources = {p.stem: p.read_text() for p in (ROOT / "examples").glob("*.py") if not p.stem.startswith("_")}
    covered = {name for name in sources if name in EXPECTED or mentions(tests, name)}
    while used := {n for n in sources.keys() - covered if any(mentions(sources[c], n) for c in covered)}:
        covered |= used
    assert sorted(sources.keys() - covered) == [], "examples without a test"
