"""What ``switchboard gateway`` prints on start is what runs: the registry applied, each entry's origin and answer."""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from agent_server.http.loopback import free_port
from tests.support.gateway_service import agent_server, billing_agent
from tests.support.terminal import Terminal

SUMMARY_END = r"  stores: [^\n]*\n"


def test_the_start_up_summary_lists_what_runs_after_the_registry_is_applied(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "gateway.toml"
    url = f"http://127.0.0.1:{port}"
    with agent_server(billing_agent()) as billing, agent_server() as helper:
        config.write_text(
            f'[gateway]\nport = {port}\nname = "desk"\ndata_dir = "{tmp_path / "data"}"\n\n'
            '[[agents]]\nname = "triage"\nhandoffs = ["billing"]\n\n'
            f'[[agents]]\nname = "billing"\nurl = "{billing}"\n\n'
            f'[[tools]]\nname = "ledger"\nagent = "{helper}"\n',
            encoding="utf-8",
        )
        with Terminal("gateway", "--config", str(config)) as first:
            first.expect(SUMMARY_END)
            assert re.search(rf"    billing \({billing}, answered at start; from {config}\)", first.screen)
            with agent_server() as doomed:
                assert httpx.post(f"{url}/agents", json={"url": doomed, "name": "doomed"}).status_code == 201
            assert httpx.post(f"{url}/agents", json={"url": helper, "name": "helper"}).status_code == 201
            assert httpx.delete(f"{url}/agents/billing").status_code == 200
            tool = {"name": "notes", "agent": helper}
            assert httpx.post(f"{url}/tools", json=tool).status_code == 201
        with Terminal("gateway", "--config", str(config)) as second:
            second.expect(SUMMARY_END)
            assert {agent["name"] for agent in httpx.get(f"{url}/agents").json()["agents"]} == {
                "triage",
                "helper",
                "doomed",
            }
    screen = second.screen.replace("\r\n", "\n")
    assert f"switchboard gateway 'desk' on {url}\n" in screen
    assert f"    triage, starting (local; from {config})\n" in screen
    assert f"    helper ({helper}, answered at start; from the registry)\n" in screen
    assert f"    doomed ({doomed}, did not answer at start; from the registry)\n" in screen
    assert f"    ledger ({helper}, answered at start; from {config})\n" in screen
    assert f"    notes ({helper}, answered at start; from the registry)\n" in screen
    assert "  removed through the API (kept in the registry): billing\n" in screen
    assert "    billing (" not in screen, "an agent of the file the API removed does not run"
