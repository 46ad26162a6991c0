"""The CLI as a person sees it on a terminal (a pseudo-terminal): streaming text, chat commands, start-up failures."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gateway.cli.progress import CallLine, usd
from gateway.service import RemoteSpec
from tests.support.gateway_service import agent_server, billing_agent, gateway_server, triage_service
from tests.support.lockstep import Lockstep
from tests.support.terminal import ROOT, Terminal
from tests.support.waiting import PROCESS_S

pytestmark = pytest.mark.timeout(60)


def _switchboard(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", *args], cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_S
    )


def test_version_prints_the_installed_version() -> None:
    from importlib.metadata import version

    done = _switchboard("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"switchboard {version('a2a-switchboard')}"


def test_call_on_a_terminal_shows_each_chunk_as_it_arrives() -> None:
    """The agent makes each chunk only once the terminal shows the one before: the text is not held to the end."""
    lockstep = Lockstep(chunks=4)
    with agent_server(lockstep.agent()) as url, Terminal("call", url, "go", "--mode", "streaming") as terminal:
        lockstep.seen()
        for index in range(4):
            terminal.expect(f"chunk-{index} ")
            lockstep.seen()
        terminal.expect(r"\[completed · \d+ chunks · \$0\.0040 · \d+\.\d s\]")
        assert terminal.wait() == 0
    assert terminal.screen.count("chunk-0") == 1, "streamed text is not printed again at the end"


@pytest.fixture(scope="module")
def desk() -> Iterator[tuple[str, Lockstep]]:
    """Triage (local) with a billing agent and a research tool whose agent streams in lockstep with the test."""
    lockstep = Lockstep(chunks=5, timeout_s=30)
    with agent_server(billing_agent()) as billing, agent_server(lockstep.agent("researcher")) as researcher:
        service = triage_service(remotes=(RemoteSpec(billing, "billing", handoff_from=("triage",)),))
        with gateway_server(service) as url:
            tool = {
                "name": "research",
                "agent": researcher,
                "mode": "streaming",
                "max_cost_usd": 0.0025,
                "description": "Research outages and incidents.",
                "attach_to": ["triage"],
            }
            assert httpx.post(f"{url}/tools", json=tool, timeout=10).status_code == 201
            yield url, lockstep


def test_chat_commands_are_done_by_the_cli_and_never_sent(desk: tuple[str, Lockstep]) -> None:
    url, _ = desk
    runs_before = len(httpx.get(f"{url}/runs", timeout=10).json()["runs"])
    with Terminal("chat", "--gateway", url, "--session", "commands") as terminal:
        terminal.expect("you> ")
        terminal.send("/help")
        terminal.expect(r"/reset\s+the starting agent takes the next message")
        terminal.expect("you> ")
        terminal.send("/agent")
        terminal.expect(r"triage \(starting\): local")
        terminal.expect(r"billing: remote")
        terminal.send("/agent nobody")
        terminal.expect(r"the gateway answered 404: no agent named 'nobody' \(agents: billing, triage\)")
        terminal.send("/agent billing")
        terminal.expect(r"\[billing takes the next message\]")
        terminal.send("hello there")
        terminal.expect(r"billing> Billing here: your refund is on its way\.")
        terminal.send("/reset")
        terminal.expect(r"\[triage takes the next message\]")
        terminal.send("hello again")
        terminal.expect(r"triage> ")
        terminal.send("/quit")
        assert terminal.wait() == 1  # the refused /agent nobody
    assert "[triage -> billing]" not in terminal.screen, "/agent billing handed the session over without a transfer"
    runs = httpx.get(f"{url}/runs", timeout=10).json()["runs"]
    assert len(runs) == runs_before + 2, "only the two messages made runs"
    assert [run["agent"] for run in runs[:2]] == ["triage", "billing"]


def test_chat_shows_an_agent_tool_call_live_and_how_it_ended(desk: tuple[str, Lockstep]) -> None:
    url, lockstep = desk
    with Terminal("chat", "--gateway", url, "--session", "progress") as terminal:
        terminal.expect("you> ")
        terminal.send("please research the outage")
        terminal.expect(r"\[triage calls research\]")
        terminal.expect(r"\[research: 1 chunk · \$0\.0000 of \$0\.0025 budget\]")  # the task's working status
        for chunks, cost in ((2, "0010"), (3, "0020")):
            lockstep.seen()
            terminal.expect(rf"\[research: {chunks} chunks · \$0\.{cost} of \$0\.0025 budget\]")
        lockstep.seen()
        terminal.expect(
            r"\[research: 3 chunks · \$0\.0030 of \$0\.0025 budget · budget_exceeded, cancel acknowledged\]\n"
        )
        terminal.expect(r"triage> ")
        terminal.send("/quit")
        assert terminal.wait() == 0


def test_the_call_line_and_costs_are_rounded_for_people_not_in_the_data() -> None:
    call = CallLine({"type": "agent_tool_invoked", "tool": "research", "max_cost_usd": 0.004})
    for index in range(3):
        call.update({"type": "agent_tool_progress", "chunk_index": index, "accumulated_cost_usd": 0.0015 * (index + 1)})
    call.update({"type": "agent_tool_completed", "accumulated_cost_usd": 0.0015 + 0.0015 + 0.0015})
    assert call.line() == "research: 3 chunks · $0.0045 of $0.0040 budget · completed"
    assert usd(None) == "$?"


def test_call_logs_costs_rounded_and_keeps_them_exact_in_its_events(scripted_url: str) -> None:
    done = _switchboard("call", scripted_url, "stream 3 0.01 0.0015", "--mode", "streaming", "-v")
    assert done.returncode == 0, done.stderr
    assert "accumulated_cost_usd=0.0045 " in done.stderr and "0.0045000000000000005" not in done.stderr
    ending = json.loads(done.stdout.splitlines()[-1])
    assert ending["accumulated_cost_usd"] == 0.0015 + 0.0015 + 0.0015


def test_gateway_log_level_flag_wins_over_the_configuration(tmp_path: Path) -> None:
    config = tmp_path / "gw.toml"
    config.write_text('[gateway]\nlog_level = "info"\n')
    done = _switchboard("gateway", "--config", str(config), "--log-level", "debug", "--check")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["gateway"]["log_level"] == "debug"
    wrong = _switchboard("gateway", "--log-level", "loud", "--check")
    assert wrong.returncode == 2 and "invalid choice: 'loud'" in wrong.stderr


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.mark.parametrize("command", [["serve", "examples/echo.py:agent"], ["gateway"]], ids=["serve", "gateway"])
def test_a_taken_port_is_one_line_and_exit_code_1(command: list[str], taken_port: int) -> None:
    done = _switchboard(*command, "--port", str(taken_port))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"switchboard {command[0]}: could not start: 127.0.0.1:{taken_port} is in use (another server?); "
        "pick another with --port"
    ]


def test_an_unreachable_agent_at_start_is_one_line_without_a_traceback(tmp_path: Path, taken_port: int) -> None:
    config = tmp_path / "gw.toml"
    config.write_text(
        '[gateway]\nstartup_wait_secs = 0\n[stores]\nsessions = "memory"\nevents = "memory"\n'
        '[[agents]]\nname = "triage"\nhandoffs = ["billing"]\n'
        f'[[agents]]\nname = "billing"\nurl = "http://127.0.0.1:{taken_port}"\n'
    )
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    done = _switchboard("gateway", "--config", str(config), "--port", str(port))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "Application startup failed" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        f"switchboard gateway: could not start: {config}: agents[1] ('billing'): "
        f"cannot fetch the agent card from http://127.0.0.1:{taken_port}"
    )
