"""The console's scenario and its browser: the demo's specialists behind a gateway on loopback, headless Chromium.

The swarm is the demo's front desk: triage (local) hands a customer to the demo's billing
service, which hands technical problems on to ``tech``. Here tech is the gateway's own
desk with a paid research tool, so one message makes one run with every part of the run
page in it: a local -> remote -> local handoff path and an agent-tool call cut at its
budget. The tool's agent is a Lockstep agent, so the test decides when each chunk comes:
the page must show a chunk before the next one is made, which proves it follows live.

Chromium is Debian's (``chromium``, put there by ``make test``); Playwright drives it
through ``executable_path``, since Playwright's own browser download needs the internet.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agent_server import create_app
from examples import demo_agents
from gateway.config.load import load_config
from gateway.service import create_gateway_app
from tests.support.lockstep import Lockstep
from tests.support.servers import serve_app

CHROMIUM_ENV = "SWITCHBOARD_CHROMIUM"
BUDGET_USD = 0.0025
CHUNK_COST_USD = 0.001
MESSAGE = "Please refund the double charge on order ORD-1234, and the app crashes with error E42."

CONFIG = """\
[gateway]
name = "support-desk"

[stores]
sessions = "memory"
events = "memory"

[swarm]
starting_agent = "triage"

[[agents]]
name = "triage"
instructions = "You are the front desk of ACME support. Route customers to billing or tech support."
handoffs = ["billing", "tech"]

[[agents]]
name = "billing"
url = "{billing}"

[[agents]]
name = "tech"
description = "Technical support: crashes, error codes, bugs and login problems."
instructions = "You are tech support at ACME. Solve crashes and error codes."
tools = ["research"]

[[tools]]
name = "research"
agent = "{researcher}"
mode = "streaming"
max_cost_usd = {budget}
description = "Research crashes and error codes in the engineering notes."
"""


def chromium_path() -> str:
    """Debian's Chromium (or ``$SWITCHBOARD_CHROMIUM``); the test is skipped, saying why, when there is none."""
    found = os.environ.get(CHROMIUM_ENV) or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.skip(
            "no Chromium to drive: `make test` installs Debian's chromium package where apt is available "
            f"(apt-get install -y chromium), or set {CHROMIUM_ENV} to a Chromium binary"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright is not installed (it is in the test extra: pip install -e '.[test]')")
    return found


@contextmanager
def support_desk(tmp_path: Path, lockstep: Lockstep, extra_config: str = "") -> Iterator[str]:
    """The scenario's services on loopback; yields the gateway's URL (its tokens come from the environment).

    ``extra_config``: TOML appended to the scenario's file, e.g. a ``[[security.tokens]]`` entry.
    """
    with (
        serve_app(create_app(demo_agents.billing)) as billing,
        serve_app(create_app(lockstep.agent("researcher"))) as researcher,
    ):
        config = tmp_path / "gateway.toml"
        config.write_text(CONFIG.format(billing=billing, researcher=researcher, budget=BUDGET_USD) + extra_config)
        with serve_app(create_gateway_app(load_config(config))) as url:
            yield url


@contextmanager
def browser_page(executable: str, errors: list[str]) -> Iterator[Any]:
    """A new page in headless Chromium; every console error and uncaught exception is appended to ``errors``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
            page.set_default_timeout(20_000)
            yield page
        finally:
            browser.close()
