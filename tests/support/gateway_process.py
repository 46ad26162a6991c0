"""`switchboard gateway --config FILE` as a process of its own, for tests that kill it (SIGKILL) and start it again."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def gateway_process(config: Path) -> Iterator[subprocess.Popen[str]]:
    """The gateway as a process; killed if the test leaves it running."""
    command = [sys.executable, "-m", "gateway", "gateway", "--config", str(config)]
    unbuffered = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True, env=unbuffered)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def remote_first_config(path: Path, port: int, agent_url: str, name: str = "slow") -> Path:
    """A configuration on SQLite files under ``path``, whose starting agent is the remote one at ``agent_url``."""
    config = path / "gateway.toml"
    config.write_text(
        f'[gateway]\nport = {port}\ndata_dir = "{path / "data"}"\n\n[swarm]\nstarting_agent = "{name}"\n\n'
        f'[[agents]]\nname = "{name}"\nurl = "{agent_url}"\n',
        encoding="utf-8",
    )
    return config
