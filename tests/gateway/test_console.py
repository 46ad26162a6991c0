"""The console at /ui in a real headless Chromium against a gateway on loopback (tests/support/console_browser.py)."""

from __future__ import annotations

import zlib
from pathlib import Path

import httpx
import pytest

from gateway.config.model import ADMIN_TOKEN_ENV
from tests.support.console_browser import BUDGET_USD, MESSAGE, browser_page, chromium_path, support_desk
from tests.support.lockstep import Lockstep

pytestmark = pytest.mark.timeout(90)
CHUNKS = 5
TOKEN = "console-test-token"


@pytest.fixture
def chromium() -> str:
    return chromium_path()


@pytest.fixture
def lockstep() -> Lockstep:
    return Lockstep(chunks=CHUNKS, timeout_s=30)


def _distinct_rows(png: bytes) -> int:
    """How many different scanlines the PNG has: 1 for a blank page (every row the same), hundreds for a drawn one."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    position, height, data = 8, 0, b""
    while position < len(png):
        length = int.from_bytes(png[position : position + 4], "big")
        kind, body = png[position + 4 : position + 8], png[position + 8 : position + 8 + length]
        if kind == b"IHDR":
            height = int.from_bytes(body[4:8], "big")
        elif kind == b"IDAT":
            data += body
        position += 12 + length
    raw = zlib.decompress(data)
    stride = len(raw) // height
    return len({raw[row * stride : (row + 1) * stride] for row in range(height)})


def test_the_agents_page_lists_the_swarm_with_kinds_bindings_tools_and_reachability(
    tmp_path: Path, chromium: str, lockstep: Lockstep
) -> None:
    errors: list[str] = []
    with support_desk(tmp_path, lockstep) as url, browser_page(chromium, errors) as page:
        page.goto(f"{url}/ui/#/agents")
        page.wait_for_selector('#agents tr[data-agent="billing"] td.reach.ok')
        rows = {
            row.get_attribute("data-agent"): row.inner_text() for row in page.query_selector_all("#agents tbody tr")
        }
        assert set(rows) == {"triage", "billing", "tech"}
        assert "starting" in rows["triage"] and "local" in rows["triage"]
        assert (
            "remote" in rows["billing"] and url.rsplit(":", 1)[0] in rows["billing"] and "A2A-NDJSON" in rows["billing"]
        )
        assert "circuit reachable" in rows["billing"]
        assert "research" in rows["tech"]
        page.goto(f"{url}/ui/#/tools")
        page.wait_for_selector('#tools tr[data-tool="research"]')
        tool = page.inner_text('#tools tr[data-tool="research"]')
        assert "streaming" in tool and f"${BUDGET_USD:.4f}" in tool and "tech" in tool
    assert errors == []


def test_a_chat_message_makes_a_run_whose_page_follows_it_live(
    tmp_path: Path, chromium: str, lockstep: Lockstep
) -> None:
    """The research agent makes each chunk only once the page shows the one before: the page is live, not replayed."""
    errors: list[str] = []
    with support_desk(tmp_path, lockstep) as url, browser_page(chromium, errors) as page:
        page.goto(f"{url}/ui/#/chat")
        page.fill('#chat input[name="message"]', MESSAGE)
        page.click('#chat button[type="submit"]')
        call = '#calls .call[data-tool="research"]'
        page.wait_for_selector(f'{call}[data-call-state="running"]')
        assert page.get_attribute("#run-state", "data-run-state") == "running"
        assert page.get_attribute('#graph path[data-edge="triage->billing"]', "data-edge")
        assert page.get_attribute('#graph path[data-edge="billing->tech"]', "data-edge")
        nodes = [node.get_attribute("data-agent") for node in page.query_selector_all("#graph g.node")]
        assert nodes == ["triage", "billing", "tech"]
        assert "this gateway" in (page.text_content('#graph g.node[data-agent="triage"]') or "")
        assert "127.0.0.1:" in (page.text_content('#graph g.node[data-agent="billing"]') or "")
        page.wait_for_selector(f'{call}[data-chunks="1"]')  # the task's working status: no chunk is made yet
        for made in range(CHUNKS):
            lockstep.seen()  # the agent may make chunk `made`: the page showed every line before it
            page.wait_for_selector(f'{call}[data-chunks="{made + 2}"], {call}[data-call-state="budget_exceeded"]')
            if page.get_attribute(call, "data-call-state") == "budget_exceeded":
                break
        assert made == 2, "chunk-0 and chunk-1 pass, chunk-2 crosses the budget"
        page.wait_for_selector('#run-state[data-run-state="completed"]')
        card = page.inner_text(call)
        assert "budget_exceeded; tasks/cancel acknowledged" in card
        assert f"of ${BUDGET_USD:.4f} budget" in card and "$0.0030" in card
        assert page.get_attribute('#terminations li[data-reason="budget_exceeded"]', "data-reason")
        per_agent = page.inner_text('#per-agent tr[data-agent="tech"]')
        assert "$0.0030" in per_agent
        assert page.query_selector('#transcript .said[data-agent="tech"]') is not None
        seqs = [int(row.get_attribute("data-seq") or -1) for row in page.query_selector_all("#timeline tbody tr")]
        assert seqs == list(range(len(seqs))) and len(seqs) > 20

        run_id = page.inner_text("h2 code")
        events = httpx.get(f"{url}/runs/{run_id}/events", timeout=10).text.splitlines()
        assert len(events) == len(seqs), "the page shows every event of the run, once"

        screenshot = tmp_path / "run-page.png"
        page.screenshot(path=str(screenshot), full_page=True)
        assert _distinct_rows(screenshot.read_bytes()) > 100

        page.goto(f"{url}/ui/#/runs")
        page.wait_for_selector(f'#runs tr[data-run="{run_id}"]')
        page.fill('.filters input[name="q"]', "no-such-run")
        page.wait_for_selector("#runs td.muted")
        page.goto(f"{url}/ui/#/sessions")
        page.wait_for_selector("#sessions tbody tr[data-session]")
        assert MESSAGE[:40] in page.inner_text("#sessions tbody")
    assert errors == []


def test_with_tokens_the_page_asks_for_one_and_sends_it_only_to_the_gateway(
    tmp_path: Path, chromium: str, lockstep: Lockstep, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ADMIN_TOKEN_ENV, TOKEN)
    errors: list[str] = []
    with support_desk(tmp_path, lockstep) as url, browser_page(chromium, errors) as page:
        assert httpx.get(f"{url}/agents", timeout=10).status_code == 401
        page_answer = httpx.get(f"{url}/ui", timeout=10)
        assert page_answer.status_code == 200
        assert "connect-src 'self'" in page_answer.headers["content-security-policy"]
        assert page_answer.headers["referrer-policy"] == "no-referrer"
        sent: list[tuple[str, str | None]] = []
        page.on("request", lambda request: sent.append((request.url, request.headers.get("authorization"))))
        page.goto(f"{url}/ui/#/agents")
        page.wait_for_selector("#token-dialog[open]")
        page.fill("#token-input", TOKEN)
        page.click("#token-save")
        page.wait_for_selector('#agents tr[data-agent="billing"] td.reach.ok')
        assert all(target.startswith(url) for target, _ in sent), sent
        assert (f"{url}/agents", f"Bearer {TOKEN}") in sent
    assert errors == []


def test_a_run_whose_agent_asked_a_question_is_shown_waiting_for_the_user_not_completed(
    tmp_path: Path, chromium: str, lockstep: Lockstep
) -> None:
    errors: list[str] = []
    with support_desk(tmp_path, lockstep) as url, browser_page(chromium, errors) as page:
        turn = httpx.post(
            f"{url}/sessions/asked/messages", json={"message": "billing: I was charged twice", "stream": False}
        ).json()
        assert turn["state"] == "input-required", turn
        page.goto(f"{url}/ui/#/runs/{turn['run_id']}")
        page.wait_for_selector('#run-state[data-run-state="input-required"]')
    assert errors == []
