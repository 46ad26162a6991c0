"""A command run on a pseudo-terminal, as a person runs it: what it writes is read as the screen receives it."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from tests.support.waiting import PROCESS_S

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = PROCESS_S


class Terminal:
    """``switchboard ARGS`` with stdin, stdout and stderr on one pty; ``expect`` waits (bounded) for text on it."""

    def __init__(self, *args: str) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gateway", *args],
            cwd=ROOT,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "TERM": "xterm"},
            close_fds=True,
        )
        os.close(slave)
        self.screen = ""
        self._cursor = 0

    def __enter__(self) -> Terminal:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        os.close(self.master)

    def expect(self, pattern: str, timeout_s: float = DEADLINE_S) -> re.Match[str]:
        """Read until ``pattern`` (a regular expression) is on the screen after what earlier calls matched."""
        deadline = time.monotonic() + timeout_s
        while True:
            match = re.compile(pattern).search(self.screen, self._cursor)
            if match:
                self._cursor = match.end()
                return match
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                raise AssertionError(f"{pattern!r} never appeared; the screen:\n{self.screen}")

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def wait(self, timeout_s: float = DEADLINE_S) -> int:
        """The exit code, reading what is left of the output meanwhile."""
        deadline = time.monotonic() + timeout_s
        while self.process.poll() is None and time.monotonic() < deadline:
            self._read(0.05)
        while self._read(0.05):
            pass
        return self.process.wait(timeout=max(0.1, deadline - time.monotonic()))

    def _read(self, timeout_s: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout_s)
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # the child closed the terminal
            return False
        self.screen += data.decode(errors="replace").replace("\r\n", "\n")
        return bool(data)
