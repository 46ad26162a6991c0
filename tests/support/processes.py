"""Stopping a server process a test started: asked to stop as an operator would, killed if it does not."""

from __future__ import annotations

import signal
import subprocess

from tests.support.waiting import PROCESS_S


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if ``process`` has not exited within PROCESS_S; returns once it has."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=PROCESS_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
