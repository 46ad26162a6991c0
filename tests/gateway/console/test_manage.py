"""The console's management actions in a real headless Chromium: each click, then the API's state after it.

Every action is checked twice: on the page (what it shows once the action is done) and
through the public API (what the gateway now holds), so a page that only pretended would fail.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_server import create_app
from examples import demo_agents
from tests.support.console_browser import MESSAGE, browser_page, chromium_path, support_desk
from tests.support.lockstep import Lockstep
from tests.support.servers import serve_app
from tests.support.waiting import wait_until

pytestmark = pytest.mark.timeout(90)
CHAT_TOKEN = "console-chat-token"
CHAT_TOKEN_ENV = "CONSOLE_TEST_CHAT_TOKEN"
CHAT_ONLY = f"""
[[security.tokens]]
name = "support-app"
scope = "chat"
token_env = "{CHAT_TOKEN_ENV}"
"""


@dataclass(frozen=True)
class Console:
    """The gateway of the scenario and a page on it; ``errors``: the page's console errors, required to stay none."""

    url: str
    page: Any
    errors: list[str]


@pytest.fixture
def console(tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Console]:
    """The support desk and a browser page; the gateway has no token (every caller is admin) unless the
    test's parameter adds configuration (``CHAT_ONLY``: one chat token, so no admin can be reached)."""
    chromium = chromium_path()
    monkeypatch.setenv(CHAT_TOKEN_ENV, CHAT_TOKEN)
    errors: list[str] = []
    extra = getattr(request, "param", "")
    with support_desk(tmp_path, Lockstep(chunks=5, timeout_s=30), extra) as url, browser_page(chromium, errors) as page:
        yield Console(url, page, errors)


@pytest.fixture
def editor() -> Iterator[str]:
    """An agent server the gateway does not know yet: what the forms point it at."""
    with serve_app(create_app(demo_agents.editor)) as url:
        yield url


def _click_twice(page: Any, selector: str) -> None:
    """A destructive button: the first click arms it, the second fires it."""
    page.click(selector)
    page.wait_for_selector(f"{selector}[data-armed]")
    page.click(selector)


def _session_page(console: Console, session_id: str) -> dict[str, Any]:
    """A session with one turn in it (triage answers alone: the message names no agent or tool), its page open;
    returns the session as the API shows it."""
    path = f"{console.url}/sessions/{session_id}"
    answer = httpx.post(f"{path}/messages", json={"message": "hello there", "stream": False}, timeout=30)
    assert answer.status_code == 200, answer.text
    console.page.goto(f"{console.url}/ui/#/sessions/{session_id}")
    console.page.wait_for_selector("#conversation .said")
    session: dict[str, Any] = httpx.get(path, timeout=10).json()
    return session


def test_register_an_agent_by_url(editor: str, console: Console) -> None:
    url, page = console.url, console.page
    page.goto(f"{url}/ui/#/agents")
    page.wait_for_selector('#agents tr[data-agent="billing"]')
    page.fill('#register-agent input[name="url"]', editor)
    page.fill('#register-agent input[name="name"]', "polisher")
    page.click('#register-agent button[type="submit"]')
    page.wait_for_selector('#agents tr[data-agent="polisher"]')
    assert "Registered agent polisher" in page.inner_text("#notice")
    assert editor in page.inner_text('#agents tr[data-agent="polisher"]')
    agents = {agent["name"]: agent for agent in httpx.get(f"{url}/agents", timeout=10).json()["agents"]}
    assert agents["polisher"]["kind"] == "remote" and agents["polisher"]["url"].startswith(editor)
    assert console.errors == []


def test_remove_an_agent(console: Console) -> None:
    url, page = console.url, console.page
    page.goto(f"{url}/ui/#/agents")
    page.wait_for_selector('#agents tr[data-agent="billing"]')
    assert page.query_selector('#agents tr[data-agent="triage"] button.danger') is None, "a local agent stays"
    _click_twice(page, '#agents tr[data-agent="billing"] button.danger')
    page.wait_for_selector("#notice:not([hidden])")
    assert page.query_selector('#agents tr[data-agent="billing"]') is None
    names = {agent["name"] for agent in httpx.get(f"{url}/agents", timeout=10).json()["agents"]}
    assert names == {"triage", "tech"}
    assert console.errors == []


def test_remove_a_tool(console: Console) -> None:
    url, page = console.url, console.page
    page.goto(f"{url}/ui/#/tools")
    _click_twice(page, '#tools tr[data-tool="research"] button.danger')
    page.wait_for_selector("#notice:not([hidden])")
    assert "Removed tool research" in page.inner_text("#notice")
    assert page.query_selector('#tools tr[data-tool="research"]') is None
    assert httpx.get(f"{url}/tools", timeout=10).json()["tools"] == []
    assert httpx.get(f"{url}/tools/research", timeout=10).status_code == 404
    assert console.errors == []


def test_define_a_tool(editor: str, console: Console) -> None:
    url, page = console.url, console.page
    page.goto(f"{url}/ui/#/tools")
    page.wait_for_selector('#tools tr[data-tool="research"]')
    page.fill('#define-tool input[name="name"]', "polish")
    page.fill('#define-tool input[name="agent"]', editor)
    page.select_option('#define-tool select[name="mode"]', "streaming")
    page.fill('#define-tool input[name="max_cost_usd"]', "0.01")
    page.click('#define-tool button[type="submit"]')
    page.wait_for_selector('#tools tr[data-tool="polish"]')
    tool = httpx.get(f"{url}/tools/polish", timeout=10).json()
    assert tool["agent"] == editor and tool["mode"] == "streaming" and tool["max_cost_usd"] == 0.01
    assert tool["used_by"] == ["triage"], "the starting agent is given it, as POST /tools does"
    assert console.errors == []


def test_read_a_session(console: Console) -> None:
    page = console.page
    session = _session_page(console, "read-me")
    lines = page.query_selector_all("#conversation .said")
    assert [line.get_attribute("data-role") for line in lines] == [m["role"] for m in session["history"]]
    assert lines[0].inner_text() == "you> hello there"
    answer = session["history"][-1]
    assert lines[-1].inner_text().startswith(f"{answer['sender']}> ")
    assert page.get_attribute("#session-holder", "data-agent") == session["active_agent"] == "triage"
    assert page.query_selector("#runs tbody tr[data-run]") is not None
    assert "null" not in page.inner_text("#view"), "nothing absent is drawn as text"
    assert console.errors == []


def test_move_a_session_to_another_agent(console: Console) -> None:
    url, page = console.url, console.page
    before = _session_page(console, "move-me")
    assert page.get_attribute("#session-holder", "data-agent") == "triage"
    page.select_option('#move-session select[name="agent"]', "tech")
    page.click('#move-session button[type="submit"]')
    page.wait_for_selector('#session-holder[data-agent="tech"]')
    assert "moved to tech" in page.inner_text("#notice")
    after = httpx.get(f"{url}/sessions/move-me", timeout=10).json()
    assert after["active_agent"] == "tech" and after["history"] == before["history"]
    assert console.errors == []


def test_reset_a_session(console: Console) -> None:
    url, page = console.url, console.page
    _session_page(console, "forget-me")
    _click_twice(page, "#move-session button.danger")
    page.wait_for_selector("#sessions")
    assert "forget-me reset" in page.inner_text("#notice")
    assert httpx.get(f"{url}/sessions/forget-me", timeout=10).status_code == 404
    assert console.errors == []


def test_cancel_a_run_in_flight(console: Console) -> None:
    """The research tool makes no chunk until the test lets it: the run is surely in flight when cancelled."""
    url, page = console.url, console.page
    page.goto(f"{url}/ui/#/chat")
    page.fill('#chat input[name="message"]', MESSAGE)
    page.click('#chat button[type="submit"]')
    call = '#calls .call[data-tool="research"]'
    page.wait_for_selector(f'{call}[data-call-state="running"]')
    run_id = page.inner_text("h2 code")
    page.click("#run-cancel")
    page.wait_for_selector('#run-state[data-run-state="cancelled"]')
    page.wait_for_selector(f'{call}[data-call-state="cancelled"]')
    assert page.is_hidden("#run-cancel-box")
    wait_until(lambda: _closed(url, run_id), f"run {run_id} to end in the event log")
    lines = httpx.get(f"{url}/runs/{run_id}/events", timeout=10).text.splitlines()
    events = [json.loads(line) for line in lines]
    types = [event["type"] for event in events]
    assert "run_cancelled" in types and types[-1] == "run_failed"
    assert page.get_attribute('#terminations li[data-reason="cancelled"]', "data-reason")
    assert console.errors == []


def _closed(url: str, run_id: str) -> bool:
    runs = httpx.get(f"{url}/runs", timeout=10).json()["runs"]
    return any(run["run_id"] == run_id and run["closed"] for run in runs)


@pytest.mark.parametrize("console", [CHAT_ONLY], indirect=True)
def test_a_chat_token_is_refused_admin_actions_and_the_page_says_so(editor: str, console: Console) -> None:
    url, page = console.url, console.page
    page.goto(f"{url}/ui/#/agents")
    page.wait_for_selector("#token-dialog[open]")
    page.fill("#token-input", CHAT_TOKEN)
    page.click("#token-save")
    page.wait_for_selector('#agents tr[data-agent="billing"]')
    page.fill('#register-agent input[name="url"]', editor)
    page.click('#register-agent button[type="submit"]')
    page.wait_for_selector("#register-agent .problem:not(:empty)")
    shown = page.inner_text("#register-agent .problem")
    assert shown.startswith("Refused by the gateway:") and "needs an admin token" in shown
    auth = {"authorization": f"Bearer {CHAT_TOKEN}"}
    names = {agent["name"] for agent in httpx.get(f"{url}/agents", headers=auth, timeout=10).json()["agents"]}
    assert names == {"triage", "billing", "tech"}
    # the browser logs each refused request itself; no script error may come with it
    assert console.errors and all("status of 403" in error for error in console.errors), console.errors
