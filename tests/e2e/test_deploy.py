"""The deployment kit: the Dockerfile and compose.yaml parsed, and the exact commands they run, run on loopback.

No docker is needed: each compose service's command is run as the image's entry point runs it
(``switchboard ARGS`` from the image's working directory, the repository's root), with its
environment. Only what loopback needs changes: agents' ``--host 0.0.0.0 --port 8000`` become
127.0.0.1 and a free port, and the gateway is pointed at them with the environment overrides
a deployment uses too (``SWITCHBOARD_PORT``, ``SWITCHBOARD__AGENTS__BILLING__URL``, ...).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import yaml

from agent_server.http.loopback import free_port
from examples._processes import service_group
from tests.support.waiting import PROCESS_S

ROOT = Path(__file__).resolve().parents[2]
ADMIN, AGENT = "deploy-admin-token", "deploy-agent-token"


def _dockerfile() -> dict[str, Any]:
    """The instructions of the Dockerfile that matter here: WORKDIR, COPY sources, ENTRYPOINT and CMD."""
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    found: dict[str, Any] = {"COPY": []}
    for line in lines:
        instruction, _, rest = line.partition(" ")
        if instruction in ("ENTRYPOINT", "CMD"):
            found[instruction] = json.loads(rest)
        elif instruction in ("WORKDIR", "FROM", "EXPOSE", "USER"):
            found[instruction] = rest.strip()
        elif instruction == "COPY":
            found["COPY"].extend(rest.split()[:-1])
    return found


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return data


def test_the_image_runs_switchboard_from_the_repository_layout() -> None:
    image = _dockerfile()
    assert image["ENTRYPOINT"] == ["switchboard"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["switchboard"] == "gateway.cli.main:main"
    assert image["CMD"][0] == "gateway" and (ROOT / image["CMD"][image["CMD"].index("--config") + 1]).is_file()
    for source in image["COPY"]:
        assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    assert image["EXPOSE"] == "8080" and image["USER"] != "root"


def test_compose_runs_three_agents_and_a_gateway_from_the_one_image() -> None:
    services = _compose()["services"]
    assert set(services) == {"billing", "tech", "researcher", "gateway"}
    assert {service["image"] for service in services.values()} == {"switchboard"}
    assert all(service["build"] == "." for service in services.values())
    for name in ("billing", "tech", "researcher"):
        assert services[name]["command"][:2] == ["serve", f"examples.demo_agents:{name}"]
    assert services["gateway"]["ports"] == ["127.0.0.1:8080:8080"], "published on the host's loopback only"


def _value(template: str, given: dict[str, str]) -> str:
    """``${NAME:?message}`` as compose expands it, from ``given``."""
    match = re.fullmatch(r"\$\{(\w+)(?::\?[^}]*)?\}", template)
    return given[match.group(1)] if match else template


def _loopback(command: list[str], port: int) -> list[str]:
    rewritten = list(command)
    rewritten[rewritten.index("--host") + 1] = "127.0.0.1"
    rewritten[rewritten.index("--port") + 1] = str(port)
    return rewritten


def test_the_compose_commands_serve_the_support_desk_behind_tokens_on_loopback(tmp_path: Path) -> None:
    services = _compose()["services"]
    secrets = {"SWITCHBOARD_ADMIN_TOKEN": ADMIN, "SWITCHBOARD_AGENT_TOKEN": AGENT}
    config_path = services["gateway"]["command"][services["gateway"]["command"].index("--config") + 1]
    config = tomllib.loads((ROOT / config_path).read_text())
    ports = {name: free_port() for name in services}
    with service_group(ROOT, tmp_path) as group:
        for name in ("billing", "tech", "researcher"):
            env = {key: _value(value, secrets) for key, value in services[name]["environment"].items()}
            group.start(
                name,
                _loopback(services[name]["command"], ports[name]),
                f"http://127.0.0.1:{ports[name]}",
                "/.well-known/agent.json",
                env,
            )
        group.wait_ready()
        env = {key: _value(value, secrets) for key, value in services["gateway"]["environment"].items()}
        env |= {"SWITCHBOARD_HOST": "127.0.0.1", "SWITCHBOARD_PORT": str(ports["gateway"])}
        env["SWITCHBOARD_DATA_DIR"] = str(tmp_path / "data")
        for entry, key, section in [(a, "url", "AGENTS") for a in config["agents"] if "url" in a] + [
            (t, "agent", "TOOLS") for t in config["tools"]
        ]:
            service = urlsplit(entry[key]).hostname
            env[f"SWITCHBOARD__{section}__{entry['name'].upper()}__{key.upper()}"] = (
                f"http://127.0.0.1:{ports[service]}"
            )
        url = f"http://127.0.0.1:{ports['gateway']}"
        group.start("gateway", services["gateway"]["command"], url, "/health", env)
        group.wait_ready()

        check = [
            arg.replace("127.0.0.1:8080", f"127.0.0.1:{ports['gateway']}")
            for arg in services["gateway"]["healthcheck"]["test"][1:]
        ]
        assert (
            subprocess.run(
                [sys.executable if check[0] == "python" else check[0], *check[1:]], timeout=PROCESS_S
            ).returncode
            == 0
        )

        admin = {"authorization": f"Bearer {ADMIN}"}
        with httpx.Client(base_url=url, timeout=30) as http:
            assert http.get("/agents").status_code == 401
            assert httpx.post(f"http://127.0.0.1:{ports['billing']}/tasks/send", json={}, timeout=10).status_code == 401
            turn = http.post(
                "/sessions/deploy/messages",
                json={"message": "I was charged twice for order ORD-1234, please refund it.", "stream": False},
                headers=admin,
            )
            assert turn.status_code == 200, turn.text
            assert turn.json()["active_agent_name"] == "billing" and "refund is issued" in turn.json()["content"]
            call = http.post("/tools/research/call", json={"input": "chargeback rules"}, headers=admin)
            assert call.status_code == 502 and call.json()["error"]["data"]["reason"] == "budget_exceeded"
            assert http.get("/ui").status_code == 200


def test_the_wheel_carries_the_console(tmp_path: Path) -> None:
    """A wheel install serves /ui from the package: its files are package data."""
    source = tmp_path / "source"
    source.mkdir()
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, source / part)
    for package in ("protocol", "agent_server", "gateway"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            str(source),
            "-w",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    wheel = next(tmp_path.glob("*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"gateway/console/static/{p.name}" for p in (ROOT / "gateway" / "console" / "static").iterdir()}
    assert shipped <= names and "gateway/console/static/index.html" in names
