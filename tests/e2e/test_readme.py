"""The README's curl examples and Python snippets, run as written against live servers on loopback.

The README uses ports 8001 (echo), 8002 (researcher) and 8080 (gateway); the test starts
the same commands on free ports and rewrites the port numbers, nothing else. Each Python
block is run on its own, as a file, as a reader would paste it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from agent_server.http.loopback import free_port
from examples._processes import ServiceGroup, service_group
from tests.support.waiting import PROCESS_S

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)
_PYTHON = re.compile(r"```python\n(.*?)```", re.S)

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


def _commands(block: str) -> list[str]:
    """Logical lines (backslash continuations joined) without comments."""
    joined = block.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def curl_blocks() -> list[list[str]]:
    """The README's sh blocks made only of curl commands (and variables set from curl)."""
    blocks = [_commands(b) for b in _BLOCK.findall(README)]
    return [b for b in blocks if b and all(c.startswith("curl ") or re.match(r"^\w+=\$\(curl ", c) for c in b)]


def _with_ports(text: str, ports: dict[str, int]) -> str:
    for readme_port, port in ports.items():
        text = text.replace(f"127.0.0.1:{readme_port}", f"127.0.0.1:{port}")
    return text


def _run(commands: list[str], ports: dict[str, int], cwd: Path) -> list[tuple[str, str]]:
    """Run one block in one shell; returns (command, its output) pairs."""
    script = ["set -euo pipefail"]
    for index, written in enumerate(commands):
        command = _with_ports(written, ports)
        script += [f"echo '@@ {index}'", command, "echo"]
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    outputs = re.split(r"^@@ \d+\n", done.stdout, flags=re.M)[1:]
    assert len(outputs) == len(commands)
    return list(zip(commands, outputs, strict=True))


def _path_of(command: str) -> str:
    match = re.search(r"127\.0\.0\.1:\d+(\S*?)['\"\s]", command + " ")
    assert match, command
    return match.group(1)


def _json_lines(output: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in output.splitlines() if line.strip()]


def test_the_readme_has_curl_examples_for_every_binding_endpoint() -> None:
    text = " ".join(c for block in curl_blocks() for c in block)
    for path in (
        "/tasks/send ",
        "/tasks/sendSubscribe",
        "/tasks/get",
        "/tasks/t1",
        "/tasks/resubscribe",
        "/.well-known/agent-card.json",
        "/agents",
        "/tools",
        "/sessions/",
        "/runs",
    ):
        assert path in text, path


def _start_example_agents(group: ServiceGroup, ports: dict[str, int]) -> None:
    """The README's two example agents, echo (its port 8001) and researcher (8002), on ``ports``."""
    for name, target, readme_port in (("echo", "echo.py:agent", "8001"), ("researcher", "researcher.py:agent", "8002")):
        port = ports[readme_port]
        group.start(
            name,
            ["serve", f"{ROOT / 'examples' / target}", "--port", str(port)],
            f"http://127.0.0.1:{port}",
            "/.well-known/agent.json",
        )


def test_every_readme_curl_example_works_against_live_servers(tmp_path: Path) -> None:
    ports = {"8001": free_port(), "8002": free_port(), "8080": free_port()}
    with service_group(tmp_path, tmp_path) as group:
        _start_example_agents(group, ports)
        group.start(
            "gateway", ["gateway", "--port", str(ports["8080"])], f"http://127.0.0.1:{ports['8080']}", "/health"
        )
        group.wait_ready()
        results = [pair for block in curl_blocks() for pair in _run(block, ports, tmp_path)]

    assert len(results) >= 14
    by_path: dict[str, list[dict[str, Any]]] = {}
    for command, output in results:
        if not command.startswith("curl "):
            continue
        lines = _json_lines(output)
        assert lines, f"no output from: {command}"
        assert not any("error" in line for line in lines), f"{command}\n{output}"
        by_path[_path_of(command)] = lines

    stream = by_path["/tasks/sendSubscribe"]
    assert [e["seq"] for e in stream] == list(range(len(stream)))
    assert [e["final"] for e in stream].count(True) == 1 and stream[-1]["final"] is True
    assert sum(1 for e in stream if e["type"] == "artifact") == 5
    assert [e["seq"] for e in by_path["/tasks/resubscribe"]] == list(range(4, len(stream)))
    assert by_path["/tasks/t1"][0]["status"]["state"] == "completed"
    assert by_path["/"][0]["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", "standard A2A, v1.0"
    tool_call = by_path["/tools/research/call"]
    assert tool_call[-1]["type"] == "agent_tool_terminated" and tool_call[-1]["reason"] == "budget_exceeded"
    assert tool_call[-1]["cancel_acknowledged"] is True
    session = by_path["/sessions/s1/messages"]
    assert any(e["type"] == "handoff" and e["target"] == "echo" for e in session)
    assert session[-1]["type"] == "run_completed" and session[-1]["content"] == "please echo this back"
    events = by_path["/runs/$RUN/events?after_seq=2"]
    assert events and all(e["seq"] > 2 for e in events)


def test_every_readme_python_snippet_runs_as_written(tmp_path: Path) -> None:
    blocks = _PYTHON.findall(README)
    assert len(blocks) >= 3
    ports = {"8001": free_port(), "8002": free_port()}
    with service_group(tmp_path, tmp_path) as group:
        _start_example_agents(group, ports)
        group.wait_ready()
        outputs = []
        for index, block in enumerate(blocks):
            script = tmp_path / f"snippet_{index}.py"
            script.write_text(_with_ports(block, ports))
            done = subprocess.run(
                [sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_S, check=False
            )
            assert done.returncode == 0, f"README python block {index}:\n{block}\n{done.stderr}"
            outputs.append(done.stdout)
    printed = "".join(outputs)
    assert "billing Done: refunded $49.99 on ORD-1234." in printed
    assert "chunks, $0.0200" in printed and "echo please echo this back" in printed
