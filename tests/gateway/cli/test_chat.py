"""``switchboard chat`` driven through its standard input against a gateway service on loopback."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gateway.cli.chat import ChatView
from gateway.cli.main import main
from gateway.service import RemoteSpec
from tests.support.gateway_service import agent_server, billing_agent, gateway_server, triage_service
from tests.support.waiting import PROCESS_S

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def gateway_url() -> Iterator[str]:
    """Local triage (offline model) in front of a remote billing agent it may hand off to."""
    with agent_server(billing_agent()) as billing_url:
        service = triage_service(remotes=(RemoteSpec(billing_url, "billing", handoff_from=("triage",)),))
        with gateway_server(service) as url:
            yield url


def _chat(gateway_url: str, stdin: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway", "chat", "--gateway", gateway_url, *extra],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=PROCESS_S,
    )


def test_chat_shows_the_handoff_and_who_answers_then_quits(gateway_url: str) -> None:
    done = _chat(
        gateway_url,
        "I was charged twice and need a refund\nthanks, one more thing\n/quit\nnever sent\n",
        "--session",
        "c1",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[triage -> billing] I was charged twice and need a refund",
        "billing> Billing here: your refund is on its way.",
        "billing> Billing here: your refund is on its way.",
    ]
    assert done.stderr.startswith(f"session c1 on {gateway_url}")


def test_end_of_input_leaves_and_the_session_continues_where_it_was(gateway_url: str) -> None:
    first = _chat(gateway_url, "refund for a double charge please\n", "--session", "c2")
    assert first.returncode == 0 and "[triage -> billing]" in first.stdout
    again = _chat(gateway_url, "and the invoice?", "--session", "c2")  # no newline at the end, no /quit
    assert again.returncode == 0
    assert again.stdout.splitlines() == ["billing> Billing here: your refund is on its way."]


def test_a_refused_message_is_reported_and_the_chat_goes_on(gateway_url: str) -> None:
    too_big = "x" * (1 << 20)
    done = _chat(gateway_url, f"{too_big}\nI need a refund for a double charge\n", "--session", "c3")
    assert "the gateway answered 413" in done.stderr
    assert "billing> Billing here: your refund is on its way." in done.stdout.splitlines()
    assert done.returncode == 1


def test_an_unreachable_gateway_exits_1(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("hello\n"))
    assert main(["chat", "--gateway", "http://127.0.0.1:1"]) == 1
    assert "switchboard chat: cannot reach the gateway at http://127.0.0.1:1" in capsys.readouterr().err


def test_the_view_prints_each_answer_once_and_notes_tool_calls_refusals_and_failures() -> None:
    out = io.StringIO()
    view = ChatView(out)
    view.event({"type": "text_delta", "agent": "triage", "text": "Let me check. "})
    view.event({"type": "message", "agent": "triage", "content": "Let me check. "})
    view.event({"type": "tool_call", "agent": "triage", "tool": "lookup_order"})
    view.event({"type": "tool_call", "agent": "triage", "tool": "transfer_to_billing"})
    view.event({"type": "handoff_refused", "source": "triage", "target": "billing", "cause": "cycle"})
    view.event({"type": "message", "agent": "triage", "content": "Here it is."})
    view.event({"type": "run_failed", "agent": "triage", "error": "model down"})
    view.end()
    assert out.getvalue().splitlines() == [
        "triage> Let me check. ",
        "[triage calls lookup_order]",
        "[handoff refused: cycle]",
        "triage> Here it is.",
        "[the run failed: model down]",
    ]


def test_a_session_id_with_url_characters_reaches_the_gateway_whole(gateway_url: str) -> None:
    done = _chat(gateway_url, "refund for a double charge please\n", "--session", "a?b#c")
    assert done.returncode == 1
    assert "session id 'a?b#c' is not valid" in done.stderr, done.stderr
    assert httpx.get(f"{gateway_url}/sessions/a", timeout=5).status_code == 404


def test_a_remote_agents_own_error_is_not_shown_to_the_person_chatting() -> None:
    out = io.StringIO()
    view = ChatView(out)
    failed = "the agent's task ended failed: RuntimeError: database connection lost"
    view.event(
        {"type": "run_failed", "run_id": "run_1", "agent": "billing", "error": failed, "error_type": "AgentTaskFailed"}
    )
    view.end()
    assert out.getvalue().splitlines() == [
        "[the run failed: billing's task failed; `switchboard events run_1` says why]"
    ]
